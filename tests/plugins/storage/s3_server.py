"""A real S3-compatible server for tests: moto's server mode in a subprocess, with IAM auth on.

moto accepts any key by default. Started with ``INITIAL_NO_AUTH_ACTION_COUNT``,
it answers that many requests unauthenticated and then checks every
signature against its IAM users: the first requests create a user, its
policy and its access key, so every later request needs that key (a wrong
key or secret is refused as AWS refuses it).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import boto3

from modelplatform.testing import ServerProcess, free_port

REGION = "us-east-1"
#: create_user, put_user_policy, create_access_key: then every request is authenticated.
_SETUP_ACTIONS = 3
_ALLOW_ALL = {"Version": "2012-10-17",
              "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}  # fmt: skip


@dataclass(frozen=True, slots=True)
class Keys:
    access_key_id: str
    secret_access_key: str

    def env(self) -> dict[str, str]:
        """Triton's variables for these keys (what a test hands the server)."""
        return {
            "AWS_ACCESS_KEY_ID": self.access_key_id,
            "AWS_SECRET_ACCESS_KEY": self.secret_access_key,
            "AWS_DEFAULT_REGION": REGION,
        }


class MotoServer:
    """``python -m moto.server`` on a free port; ``keys`` are the only credentials it accepts."""

    def __init__(self) -> None:
        self.port = free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self._log = Path(tempfile.mkstemp(prefix="moto-", suffix=".log")[1])
        self._process: subprocess.Popen[bytes] | None = None
        self.keys = Keys("", "")

    def __enter__(self) -> MotoServer:
        env = {**os.environ, "INITIAL_NO_AUTH_ACTION_COUNT": str(_SETUP_ACTIONS)}
        for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
            env.pop(name, None)
        command = [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)]
        with self._log.open("wb") as log:
            self._process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env,
                                             start_new_session=True)  # fmt: skip
        self._wait_listening()
        self.keys = self._make_user()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.send_signal(signal.SIGTERM)
            try:
                self._process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()

    def client(self, keys: Keys | None = None):  # boto3's generated client type
        keys = keys or self.keys
        return boto3.client("s3", endpoint_url=self.endpoint, region_name=REGION,
                            aws_access_key_id=keys.access_key_id,
                            aws_secret_access_key=keys.secret_access_key)  # fmt: skip

    def upload(
        self, bucket: str, prefix: str, folder: Path, files: Mapping[str, bytes] | None = None
    ) -> None:
        """Every file of ``folder`` under ``prefix/<folder name>/``, plus ``files`` by key."""
        client = self.client()
        for path in sorted(folder.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                key = f"{prefix}/{folder.name}/{path.relative_to(folder).as_posix()}"
                client.put_object(Bucket=bucket, Key=key, Body=path.read_bytes())
        for key, body in (files or {}).items():
            client.put_object(Bucket=bucket, Key=key, Body=body)

    def bucket_holding(self, name_prefix: str, model: Path) -> str:
        """A new bucket (``<name_prefix>-<random>``) holding ``model`` under ``models/``."""
        name = f"{name_prefix}-{uuid.uuid4().hex[:12]}"
        self.client().create_bucket(Bucket=name)
        self.upload(name, "models", model)
        return name

    def _wait_listening(self) -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self._process is not None and self._process.poll() is not None:
                raise RuntimeError(f"moto exited:\n{self._log.read_text(errors='replace')}")
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            time.sleep(0.1)
        raise TimeoutError(f"moto did not listen:\n{self._log.read_text(errors='replace')}")

    def _make_user(self) -> Keys:
        iam = boto3.client("iam", endpoint_url=self.endpoint, region_name=REGION,
                           aws_access_key_id="setup", aws_secret_access_key="setup")  # fmt: skip
        iam.create_user(UserName="model-reader")
        iam.put_user_policy(UserName="model-reader", PolicyName="all",
                            PolicyDocument=json.dumps(_ALLOW_ALL))  # fmt: skip
        made = iam.create_access_key(UserName="model-reader")["AccessKey"]
        return Keys(made["AccessKeyId"], made["SecretAccessKey"])


def serving_a_lost_store(model: Path) -> tuple[ServerProcess, str]:
    """A server started on a bucket of its own moto server, which is stopped afterwards: the
    store is gone while the server runs (the caller stops the server). Returns it and the URL."""
    with MotoServer() as own:
        own.client().create_bucket(Bucket="lost-bucket")
        own.upload("lost-bucket", "models", model)
        url = f"s3://127.0.0.1:{own.port}/lost-bucket/models"
        server = ServerProcess("--model-repository", url, env=own.keys.env())
        server.__enter__()
    return server, url
