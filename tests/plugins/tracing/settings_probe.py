"""tritonclient.grpc's trace and log settings calls against a running server.

Run as a subprocess by test_trace_extension.py (tritonclient.grpc's copy of
Triton's protos clashes with the server's inside one process). Prints one
JSON object. Usage: python settings_probe.py HOST:PORT
"""

from __future__ import annotations

import json
import sys

import tritonclient.grpc as grpcclient
from tritonclient.utils import InferenceServerException


def _error(call) -> str:  # type: ignore[no-untyped-def]  # a tritonclient error of either client
    try:
        call()
    except InferenceServerException as error:
        return f"{error.status()} {error.message()}"
    return "no error"


def probe(client: grpcclient.InferenceServerClient) -> dict:
    out: dict = {"extensions": client.get_server_metadata(as_json=True)["extensions"]}
    out["trace_global"] = client.get_trace_settings(as_json=True)["settings"]
    out["trace_model_set"] = client.update_trace_settings(
        "simple", {"trace_rate": "7", "trace_level": ["TIMESTAMPS"]}, as_json=True
    )["settings"]
    out["trace_model_get"] = client.get_trace_settings("simple", as_json=True)["settings"]
    out["trace_model_cleared"] = client.update_trace_settings(
        "simple", {"trace_rate": None, "trace_level": None}, as_json=True
    )["settings"]
    out["trace_bad_rate"] = _error(lambda: client.update_trace_settings(settings={"trace_rate": "often"}))
    out["trace_bad_levels"] = _error(
        lambda: client.update_trace_settings(settings={"trace_level": ["OFF", "TIMESTAMPS"]})
    )
    out["trace_file"] = _error(lambda: client.update_trace_settings(settings={"trace_file": "/tmp/t.json"}))
    out["trace_unknown_model"] = _error(lambda: client.get_trace_settings("no_such_model"))
    out["log_get"] = client.get_log_settings(as_json=True)["settings"]
    out["log_set"] = client.update_log_settings({"log_verbose_level": 1, "log_info": False}, as_json=True)[
        "settings"
    ]
    out["log_bad_type"] = _error(lambda: client.update_log_settings({"log_info": None}))
    out["log_file"] = _error(lambda: client.update_log_settings({"log_file": "/tmp/x.log"}))
    out["log_after_errors"] = client.get_log_settings(as_json=True)["settings"]
    client.update_log_settings({"log_verbose_level": 0, "log_info": True})
    return out


if __name__ == "__main__":
    with grpcclient.InferenceServerClient(sys.argv[1]) as grpc_client:
        print(json.dumps(probe(grpc_client)))
