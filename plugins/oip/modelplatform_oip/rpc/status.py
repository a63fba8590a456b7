"""gRPC status codes for platform errors: the core's canonical table (Triton's mapping).

Kept as a module so oip-grpc and the extensions that add RPCs to its service
(the repository plugin) import one name.
"""

from __future__ import annotations

from modelplatform import grpc_status

__all__ = ["grpc_status"]
