"""`make soak MINUTES=N`: the real server under mixed traffic for N minutes.

One ``platform serve`` (explicit control mode, so the repository API can
reload a model) and a few client processes (:mod:`soak.driver`), one per
family of dialects: OIP HTTP (JSON and binary), OIP gRPC, TF Serving (REST
and gRPC), grps (REST, gRPC, streams) and the repository API, which unloads
and reloads ``simple`` while the others use it. Each family sends valid and
invalid requests, small and large, and checks every answer
(:mod:`soak.outcomes`); the run prints a running table, then requests,
unexpected answers, 5xx, wrong answers and latency percentiles per dialect,
and the server's memory per minute (:mod:`soak.report`). It exits non-zero
on any 5xx, any wrong answer, or memory growth past the budget after the
warm-up. docs/reliability.md ("Soak") says what it drives and what a run
showed.

Modules: run (command line, orchestration), driver (one client process),
cases_* (one family's requests and their checks), payloads (inputs and
expected answers), httpwire (HTTP helpers), outcomes, tally, memory, report.
"""
