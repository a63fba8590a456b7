"""One client process of the soak: one family's requests, one at a time, until the deadline.

    python -m soak.driver FAMILY HTTP_HOST:PORT GRPC_HOST:PORT SECONDS PAUSE_MS REPORT_SECS

Families run in separate processes because tritonclient.grpc and the
server's generated OIP protos cannot share protobuf's pool in one process
(and so that one family's client cost never slows another's). Every
REPORT_SECS the process prints one JSON line: what it recorded since the
last line (:meth:`soak.tally.Tally.take`); the last line comes at the end.
"""

from __future__ import annotations

import importlib
import json
import random
import sys
import time

from soak.outcomes import ERROR, Case, Outcome, shorten
from soak.tally import Tally

FAMILIES = {
    "oip-http": "soak.cases_oip_http",
    "oip-grpc": "soak.cases_oip_grpc",
    "tfserving": "soak.cases_tfserving",
    "grps": "soak.cases_grps",
    "repository": "soak.cases_repository",
}


def attempt(case: Case) -> Outcome:
    try:
        return case.call()
    except Exception as error:  # noqa: BLE001 - a transport failure is an answer too
        return Outcome(ERROR, shorten(f"raised {type(error).__name__}: {error}"))


def drive(cases: list[Case], seconds: float, pause_secs: float, report_secs: float) -> None:
    tally = Tally()
    weights = [case.weight for case in cases]
    deadline = time.monotonic() + seconds
    next_report = time.monotonic() + report_secs
    while (now := time.monotonic()) < deadline:
        case = random.choices(cases, weights)[0]
        outcome = attempt(case)
        tally.record(case.dialect, case.name, outcome, (time.monotonic() - now) * 1000)
        if time.monotonic() >= next_report:
            print(json.dumps(tally.take()), flush=True)
            next_report += report_secs
        time.sleep(pause_secs)
    print(json.dumps(tally.take()), flush=True)


def main(argv: list[str]) -> None:
    family, http_url, grpc_url, seconds, pause_ms, report_secs = argv
    module = importlib.import_module(FAMILIES[family])
    pause_secs = getattr(module, "PAUSE_SECS", float(pause_ms) / 1000)
    drive(module.cases(http_url, grpc_url), float(seconds), pause_secs, float(report_secs))


if __name__ == "__main__":
    main(sys.argv[1:])
