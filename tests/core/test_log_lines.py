"""Workers share the supervisor's stderr: each log line must reach it whole.

Two processes log at once into one pipe, as ``--workers`` does; every line
read back must be one complete event, never two run together.
"""

from __future__ import annotations

import os
import subprocess
import sys

EVENTS_PER_WRITER = 3000
WRITER = f"""
import structlog
from modelplatform.base.logging import configure
configure()
log = structlog.get_logger()
for index in range({EVENTS_PER_WRITER}):
    log.info("line_written", writer=WRITER_NAME, index=index)
"""


def test_two_processes_logging_at_once_never_merge_lines() -> None:
    read_fd, write_fd = os.pipe()
    read_end, write_end = os.fdopen(read_fd, "rb"), os.fdopen(write_fd, "wb")
    writers = [
        subprocess.Popen([sys.executable, "-c", f"WRITER_NAME = {name!r}\n{WRITER}"], stderr=write_end)
        for name in ("a", "b")
    ]
    write_end.close()
    output = read_end.read().decode()
    for writer in writers:
        assert writer.wait(timeout=60) == 0
    events = [line for line in output.splitlines() if "line_written" in line]  # not a stray warning
    merged = [line for line in events if line.count("line_written") != 1 or line.count("writer=") != 1]
    assert not merged, merged[:3]
    assert len(events) == 2 * EVENTS_PER_WRITER
