"""Who may call what: API categories, restricted APIs and scoped API keys (docs/security.md).

Transport-neutral; the HTTP front end (http/admission.py) and the gRPC
interceptor (grpc_server.py) ask the one :class:`~.gate.AccessGate` of a server.
Kept import-free so settings.py can use the parsers without a cycle.
"""
