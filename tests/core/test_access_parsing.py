"""The access package's parsers: restricted-API groups, key files, and how a key is presented."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from modelplatform import InvalidArgument
from modelplatform.base.access.keys import KeyFile, load_keys
from modelplatform.base.access.restrictions import Restrictions
from modelplatform.frontends.gate import AccessGate, DenialKind, grpc_key, http_key

HASH = hashlib.sha256(b"k1").hexdigest()


def _file(tmp_path: Path, text: str, name: str = "keys.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_groups_parse_with_values_holding_colons_and_equals() -> None:
    restrictions = Restrictions.parse(["inference, health:X-Key=a:b=c"], "--flag")
    assert restrictions.get("health") == restrictions.get("inference")
    assert (restrictions.get("inference").key, restrictions.get("inference").value) == ("x-key", "a:b=c")
    assert restrictions.get("metadata") is None


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (
            '[[keys]]\nname = "a"\nsha256 = "%s"\ncategories = ["inference"]\nmodel = ["x"]\n' % HASH,
            "unknown field",
        ),
        ('[[keys]]\nname = "a"\nsha256 = "%s"\ncategories = ["infer"]\n' % HASH, "unknown API 'infer'"),
        ('[[keys]]\nname = "a"\nsha256 = "%s"\ncategories = []\n' % HASH, "non-empty list"),
        ('[[keys]]\nname = "a"\nsha256 = "%s"\ncategories = ["metrics"]\nmodels = "x"\n' % HASH, "'models'"),
        ('[[keys]]\nname = "a"\nsha256 = "%s"\ncategories = ["metrics"]\n' % ("z" * 64), "64 hex digits"),
        (
            '[[keys]]\nname = "a"\nsha256 = "%s"\ncategories = ["metrics"]\n' % HASH * 2,
            "two keys are named 'a'",
        ),
        ("keys = 3\n", "needs a list 'keys'"),
        ("[[keys]\n", "API keys file"),
    ],
)
def test_a_bad_key_file_is_refused_saying_why(tmp_path: Path, text: str, said: str) -> None:
    with pytest.raises(InvalidArgument, match=said):
        load_keys(_file(tmp_path, text))


def test_a_file_with_no_keys_refuses_every_call(tmp_path: Path) -> None:
    gate = AccessGate(Restrictions(), Restrictions(), KeyFile(_file(tmp_path, "keys = []\n")))
    verdict = gate.check_http("metadata", None, {"authorization": "Bearer k1"})
    assert verdict.denial is not None and verdict.denial.kind is DenialKind.UNAUTHENTICATED


def test_keys_are_found_by_hash_and_scoped(tmp_path: Path) -> None:
    text = '[[keys]]\nname = "a"\nsha256 = "%s"\ncategories = ["inference"]\nmodels = ["m"]\n' % HASH
    gate = AccessGate(Restrictions(), Restrictions(), KeyFile(_file(tmp_path, text)))
    assert gate.check_grpc("inference", "m", {"authorization": "Bearer k1"}).key_name == "a"
    assert (
        gate.check_grpc("inference", "n", {"authorization": "Bearer k1"}).denial.kind is DenialKind.FORBIDDEN
    )
    late = gate.check_grpc("inference", "", {"authorization": "Bearer k1"})  # named in the body
    assert late.denial is None and late.deferred is not None  # the handler checks it (scope.py)
    assert gate.check_grpc("", None, {"authorization": "Bearer k1"}).denial.kind is DenialKind.FORBIDDEN
    assert gate.check_grpc("health", None, {}).denial is None  # open for probes by default


def test_how_a_key_is_presented() -> None:
    assert http_key({"authorization": "Bearer  abc "}) == "abc"
    assert http_key({"authorization": "Basic abc", "x-api-key": "xyz"}) == "xyz"
    assert http_key({"authorization": "Bearer"}) == ""
    assert grpc_key({"authorization": "bearer abc"}) == "abc"
    assert grpc_key({"x-api-key": "abc"}) == ""
