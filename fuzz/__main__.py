"""``python -m fuzz [--seconds N] [--targets a,b] [--inputs N] [--driver auto|atheris|random]``.

Runs each target in its own process, one after another (one core), and
prints a table: target, inputs tried, unhandled exceptions, 5xx. Exits 1
when any target found either (its inputs are under ``--findings``), 2 when a
run died without reporting.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from .worker import atheris_available

#: Kept in step with fuzz.targets.TARGETS (importing it here would load the whole server).
TARGET_NAMES = ("oip-json", "oip-binary", "oip-grpc", "tfserving-json", "tfserving-grpc",
                "grps-json", "grps-grpc", "openai-json", "repository", "config-pbtxt")  # fmt: skip
COLUMNS = ("target", "driver", "inputs", "seconds", "exceptions", "5xx", "501")


def main() -> int:
    args = _parser().parse_args()
    names = [n.strip() for n in args.targets.split(",") if n.strip()] or list(TARGET_NAMES)
    unknown = sorted(set(names) - set(TARGET_NAMES))
    if unknown:
        sys.exit(f"unknown fuzz target(s): {', '.join(unknown)}; known: {', '.join(TARGET_NAMES)}")
    if args.driver in ("auto", "random") and not atheris_available():
        print("fuzz: atheris is not installed here (pip install -r requirements/fuzz.txt); "
              "falling back to hypothesis-driven random mutation, without coverage guidance", file=sys.stderr)  # fmt: skip
    rows = [_run(name, args) for name in names]
    _print(rows)
    if any(row.get("died") for row in rows):
        return 2
    return 1 if any(row["exceptions"] or row["server_errors"] for row in rows) else 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m fuzz")
    parser.add_argument("--seconds", type=float, default=float(os.environ.get("FUZZ_SECONDS", "60")))
    parser.add_argument("--targets", default=os.environ.get("FUZZ_TARGETS", ""))
    parser.add_argument("--inputs", type=int, default=int(os.environ.get("FUZZ_INPUTS", "0")))
    parser.add_argument(
        "--driver", choices=("auto", "atheris", "random"), default=os.environ.get("FUZZ_DRIVER", "auto")
    )
    parser.add_argument("--findings", type=Path, default=Path(".fuzz/findings"))
    return parser


def _run(name: str, args: argparse.Namespace) -> dict[str, object]:
    stats = Path(tempfile.mkstemp(prefix=f"fuzz-{name}-", suffix=".json")[1])
    command = [sys.executable, "-m", "fuzz.worker", name, "--seconds", str(args.seconds), "--inputs",
               str(args.inputs), "--driver", args.driver, "--stats", str(stats), "--findings", str(args.findings)]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True)
    text = stats.read_text() if stats.stat().st_size else ""
    stats.unlink()
    if done.returncode != 0 or not text:
        print(f"fuzz: {name} ended with {done.returncode}:\n{done.stderr[-3000:]}", file=sys.stderr)
        row = json.loads(text) if text else {"target": name, "driver": args.driver, "inputs": 0, "seconds": 0,
                                              "exceptions": 0, "server_errors": 0, "unimplemented": 0}  # fmt: skip
        return {**row, "died": True}
    return json.loads(text)


def _print(rows: list[dict[str, object]]) -> None:
    cells = [[str(row["target"]) + (" (died)" if row.get("died") else ""), str(row["driver"]),
              f"{row['inputs']:,}", f"{row['seconds']}", str(row["exceptions"]), str(row["server_errors"]),
              str(row["unimplemented"])] for row in rows]  # fmt: skip
    widths = [max(len(c), *(len(r[i]) for r in cells)) for i, c in enumerate(COLUMNS)]
    for line in [list(COLUMNS), *cells]:
        print("  ".join(cell.ljust(width) for cell, width in zip(line, widths)))
    for row in rows:
        for signature, count in dict(row.get("signatures") or {}).items():
            print(f"{row['target']}: {count} x {signature}")


if __name__ == "__main__":
    sys.exit(main())
