"""The server's grpc experiments: set before grpc starts, and an operator's own setting wins."""

from __future__ import annotations

import os
import subprocess
import sys

from modelplatform.composition.grpc_experiments import GRPC_EXPERIMENTS, use_grpc_experiments

PROBE = """
import os, sys
import modelplatform
before = "grpc" in sys.modules
import modelplatform.composition.cli
print(before, os.environ.get("GRPC_EXPERIMENTS"))
"""


def _probe(env: dict[str, str]) -> str:
    result = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, timeout=120
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_set_when_the_operator_did_not():
    environ: dict[str, str] = {}
    use_grpc_experiments(environ)
    assert environ == {"GRPC_EXPERIMENTS": GRPC_EXPERIMENTS}


def test_the_operators_setting_wins():
    environ = {"GRPC_EXPERIMENTS": "event_engine_listener"}
    use_grpc_experiments(environ)
    assert environ == {"GRPC_EXPERIMENTS": "event_engine_listener"}


def test_the_cli_sets_it_before_grpc_is_imported():
    # grpc reads the variable once, at import: the CLI's path must not import grpc first.
    env = {k: v for k, v in os.environ.items() if k != "GRPC_EXPERIMENTS"}
    assert _probe(env) == f"False {GRPC_EXPERIMENTS}"
    assert _probe({**env, "GRPC_EXPERIMENTS": "-x"}) == "False -x"
