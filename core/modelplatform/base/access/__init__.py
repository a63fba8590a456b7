"""Who may call what: API categories, restricted APIs and scoped API keys (docs/security.md).

The parts, transport-neutral: ``categories`` (the API category every route and
gRPC method declares), ``restrictions`` (Triton's restricted-API groups),
``keys`` (the scoped API-key file) and ``scope`` (the model check a handler owes
when the gate could not name the model). The one decision per call is made by
the front ends' gate (``frontends/gate.py``), which the HTTP front end
(``frontends/http/admission.py``) and the gRPC interceptor
(``frontends/grpc_access.py``) ask. Kept import-free so settings can use the
parsers without a cycle.
"""
