"""Coverage-guided fuzzing of every request decoder, through the real request path.

``python -m fuzz`` (``make fuzz``) runs each target of :mod:`fuzz.targets` for a
chosen time and prints what it tried and found. A target turns the fuzzer's
bytes into one request of its dialect and hands it to the same handlers the
server's ports call (:mod:`fuzz.server`): the dialect's HTTP route handler
with a neutral request, or the gRPC servicer method with the deserialised
message, against the example models. An answer in the dialect's error shape
is the expected end of a malformed input; a 5xx answer (or a gRPC INTERNAL /
UNKNOWN status, or a grps status of 500 or more) and any exception that
escapes the handler are findings.

atheris (libFuzzer) drives the search where it is installed
(requirements/fuzz.txt); without it a hypothesis-driven random mutator over
the same seeds does (:mod:`fuzz.drivers`).
"""
