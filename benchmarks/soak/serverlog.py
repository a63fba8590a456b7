"""Lines of the server's log that deserve a look: warnings, errors and tracebacks.

The soak prints them (grouped, most frequent first) beside its verdict; they
do not fail the run by themselves, but a clean run has none.
"""

from __future__ import annotations

import re
from collections import Counter

#: structlog's console levels ("[error    ]") and the stdlib's ("ERROR:sanic.error:").
NOTABLE = re.compile(r"\[(warning|error|critical) *\]|^(WARNING|ERROR|CRITICAL):|^Traceback ")
TIMESTAMP = re.compile(r"^\S*\d{4}-\d\d-\d\dT\S+ ")
SHOWN_CHARS = 160
#: Printed once per process by absl (TensorFlow's C++ logging) when TensorFlow is imported: a
#: notice about where its own early log lines go, not a warning about the server.
ABSL_NOTICE = "WARNING: All log messages before absl::InitializeLog() is called are written to STDERR"


def notable_lines(log: str) -> Counter[str]:
    """Each notable line without its timestamp, counted."""
    return Counter(
        TIMESTAMP.sub("", line)[:SHOWN_CHARS]
        for line in log.splitlines()
        if NOTABLE.search(line) and line != ABSL_NOTICE
    )
