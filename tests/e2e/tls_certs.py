"""Certificates made in the test run (the ``cryptography`` package): a CA, server and client leaves.

Every certificate is fresh and short-lived; nothing is read from the repository.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

_DAY = datetime.timedelta(days=1)


@dataclass(frozen=True)
class Pem:
    """A certificate and its key, PEM-encoded, and the serial number that tells it apart."""

    cert: bytes
    key: bytes
    serial: int

    def write(self, cert_path: Path, key_path: Path) -> None:
        """Replace both files atomically (a reader sees the old pair or the new one's file)."""
        _replace(cert_path, self.cert)
        _replace(key_path, self.key)


class Authority:
    """A test CA issuing server and client certificates."""

    def __init__(self, common_name: str = "modelplatform test CA") -> None:
        self._key = ec.generate_private_key(ec.SECP256R1())
        self._name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
        now = datetime.datetime.now(datetime.UTC)
        self.cert = (
            x509.CertificateBuilder()
            .subject_name(self._name)
            .issuer_name(self._name)
            .public_key(self._key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - _DAY)
            .not_valid_after(now + _DAY)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(self._key, hashes.SHA256())
        )
        self.pem = self.cert.public_bytes(serialization.Encoding.PEM)

    def server(self, common_name: str = "localhost") -> Pem:
        names = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
        return self._issue(common_name, ExtendedKeyUsageOID.SERVER_AUTH, names)

    def client(self, common_name: str = "test-client") -> Pem:
        return self._issue(common_name, ExtendedKeyUsageOID.CLIENT_AUTH, [])

    def _issue(self, common_name: str, usage: x509.ObjectIdentifier, names: list[x509.GeneralName]) -> Pem:
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        serial = x509.random_serial_number()
        builder = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)]))
            .issuer_name(self._name)
            .public_key(key.public_key())
            .serial_number(serial)
            .not_valid_before(now - _DAY)
            .not_valid_after(now + _DAY)
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        )
        if names:
            builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
        cert = builder.sign(self._key, hashes.SHA256())
        key_pem = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        return Pem(cert.public_bytes(serialization.Encoding.PEM), key_pem, serial)


def serial_of(cert_pem: bytes) -> int:
    return x509.load_pem_x509_certificate(cert_pem).serial_number


def _replace(path: Path, data: bytes) -> None:
    scratch = path.with_name(path.name + ".new")
    scratch.write_bytes(data)
    os.replace(scratch, path)
