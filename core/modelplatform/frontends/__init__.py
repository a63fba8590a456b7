"""Layer 4, the front ends: the one HTTP front end (router, fast lane, Sanic), the grpc.aio
server, TLS listeners, the access gate, one-port mode and ``--workers``.

Imports the layers below; nothing below imports it.
"""
