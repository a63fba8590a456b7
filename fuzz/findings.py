"""What counts as a finding, the counts of one run, and where findings are kept."""

from __future__ import annotations

import hashlib
import json
import re
import traceback
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from .server import Outcome

#: gRPC codes that are the server's fault (what HTTP maps to 5xx), beside an escaped exception.
GRPC_SERVER_FAULTS = frozenset({"INTERNAL", "UNKNOWN", "DATA_LOSS", "UNAVAILABLE"})
#: A declared "not supported" (TF Serving answers UNIMPLEMENTED for a JSON value it cannot
#: convert, e.g. to half): counted apart, never a finding.
UNIMPLEMENTED = (501, "UNIMPLEMENTED")
#: Findings kept per distinct signature (the rest are only counted).
KEPT_PER_SIGNATURE = 3


def kind_of(outcome: Outcome) -> str | None:
    """``"exception"``, ``"5xx"`` or None (the input was answered as it should be)."""
    if outcome.escaped is not None:
        return "exception"
    status = outcome.status
    if status in UNIMPLEMENTED:
        return None
    if isinstance(status, int) and status >= 500 or status in GRPC_SERVER_FAULTS:
        return "5xx"
    return None


def signature(outcome: Outcome) -> str:
    """Findings that differ only in numbers and quoted names are one finding."""
    if outcome.escaped is not None:
        frames = traceback.extract_tb(outcome.escaped.__traceback__)[-1:]
        where = f"{frames[0].filename.rsplit('/', 1)[-1]}:{frames[0].lineno}" if frames else ""
        return f"{type(outcome.escaped).__name__} at {where}"
    return f"{outcome.status} " + re.sub(r"'[^']*'|\d+", "_", outcome.detail)[:120]


@dataclass
class Tally:
    """The counts one target's run reports."""

    target: str
    driver: str
    inputs: int = 0
    exceptions: int = 0
    server_errors: int = 0
    unimplemented: int = 0
    seconds: float = 0.0
    signatures: Counter[str] = field(default_factory=Counter)

    def count(self, outcome: Outcome, data: bytes, keep: Path | None) -> None:
        self.inputs += 1
        if outcome.status in UNIMPLEMENTED:
            self.unimplemented += 1
        kind = kind_of(outcome)
        if kind is None:
            return
        if kind == "exception":
            self.exceptions += 1
        else:
            self.server_errors += 1
        name = signature(outcome)
        self.signatures[name] += 1
        if keep is not None and self.signatures[name] <= KEPT_PER_SIGNATURE:
            _keep(keep, kind, name, outcome, data)

    def to_json(self) -> dict[str, object]:
        return {"target": self.target, "driver": self.driver, "inputs": self.inputs,
                "exceptions": self.exceptions, "server_errors": self.server_errors,
                "unimplemented": self.unimplemented, "seconds": round(self.seconds, 1),
                "signatures": dict(self.signatures)}  # fmt: skip


def _keep(folder: Path, kind: str, name: str, outcome: Outcome, data: bytes) -> None:
    """The input as a file the regression test replays, and a note saying what it did."""
    folder.mkdir(parents=True, exist_ok=True)
    stem = f"{kind}-{hashlib.sha1(data).hexdigest()[:16]}"
    (folder / stem).write_bytes(data)
    detail = "".join(traceback.format_exception(outcome.escaped)) if outcome.escaped else outcome.detail
    (folder / f"{stem}.txt").write_text(
        json.dumps({"signature": name, "status": str(outcome.status)}) + "\n" + detail
    )
