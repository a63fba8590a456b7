"""One target, one process: ``python -m fuzz.worker TARGET --seconds N --stats FILE``.

Run by :mod:`fuzz.__main__`; a process per target because libFuzzer never
returns to its caller. The counts are written to ``--stats`` every second and
at the end, so a run cut short still reports what it tried.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import tempfile
import time
from pathlib import Path

#: The code under test, instrumented for coverage when atheris drives (protobuf's pure-Python
#: text and JSON parsers are not: instrumented, config.pbtxt inputs ran ten times slower).
INSTRUMENTED = ("modelplatform", "modelplatform_oip", "modelplatform_binary_data", "modelplatform_tfserving",
                "modelplatform_grps", "modelplatform_repository")  # fmt: skip
REGRESSIONS = Path(__file__).resolve().parent.parent / "tests" / "fuzz" / "corpus"
#: libFuzzer's longest input: the seeds' size and room to grow, not megabytes of noise.
MAX_LEN = 8192


def atheris_available() -> bool:
    return importlib.util.find_spec("atheris") is not None


def main(argv: list[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    driver = args.driver if args.driver != "auto" else ("atheris" if atheris_available() else "random")
    if driver == "atheris":
        _atheris(args)
    else:
        _random(args)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m fuzz.worker")
    parser.add_argument("target")
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--inputs", type=int, default=0, help="stop after this many inputs (0: time only)")
    parser.add_argument("--driver", choices=("auto", "atheris", "random"), default="auto")
    parser.add_argument("--stats", type=Path, required=True)
    parser.add_argument("--findings", type=Path, default=Path(".fuzz/findings"))
    return parser


class _Loop:
    """Feeds inputs to the target, counts them, writes the counts, stops when the run is over."""

    def __init__(self, args: argparse.Namespace, driver: str) -> None:
        from .findings import Tally
        from .server import FuzzServer
        from .targets import TARGETS

        self.target = TARGETS[args.target]
        self.server = FuzzServer()
        self.tally = Tally(args.target, driver)
        self.args = args
        self.started = time.monotonic()
        self.written = self.started

    def one(self, data: bytes) -> None:
        outcome = self.server.run(self.target.run(self.server, data))
        self.tally.count(outcome, data, self.args.findings / self.args.target)
        now = time.monotonic()
        if now - self.written >= 1.0 or self.over(now):
            self.write(now)

    def over(self, now: float) -> bool:
        limit = self.args.inputs
        return now - self.started >= self.args.seconds or (limit > 0 and self.tally.inputs >= limit)

    def write(self, now: float) -> None:
        self.tally.seconds = now - self.started
        self.args.stats.write_text(json.dumps(self.tally.to_json()))
        self.written = now


def _atheris(args: argparse.Namespace) -> None:
    import atheris

    with atheris.instrument_imports(include=list(INSTRUMENTED)):
        loop = _Loop(args, "atheris")
    corpus = Path(tempfile.mkdtemp(prefix=f"fuzz-{args.target}-"))
    for index, seed in enumerate(loop.target.seeds()):
        (corpus / f"seed-{index}").write_bytes(seed)
    dirs = [str(corpus)] + [str(d) for d in (REGRESSIONS / args.target,) if d.is_dir()]

    def one(data: bytes) -> None:
        loop.one(data)
        if loop.over(time.monotonic()):
            loop.write(time.monotonic())
            os._exit(0)  # libFuzzer has no "stop now" for Python; the counts are written

    args.findings.mkdir(parents=True, exist_ok=True)
    flags = [f"-max_len={MAX_LEN}", "-timeout=20", "-rss_limit_mb=4096", f"-artifact_prefix={args.findings}/",
             f"-max_total_time={int(args.seconds) + 60}", "-print_final_stats=0", "-close_fd_mask=3"]  # fmt: skip
    atheris.Setup([sys.argv[0], *flags, *dirs], one)
    atheris.Fuzz()


def _random(args: argparse.Namespace) -> None:
    from .mutate import fuzz_randomly

    loop = _Loop(args, "random")
    fuzz_randomly(
        loop.target.seeds() + _regressions(args.target), loop.one, lambda: loop.over(time.monotonic())
    )
    loop.write(time.monotonic())


def _regressions(target: str) -> list[bytes]:
    folder = REGRESSIONS / target
    return [p.read_bytes() for p in sorted(folder.iterdir()) if p.suffix != ".txt"] if folder.is_dir() else []


if __name__ == "__main__":
    main()
