"""Each server has its own region registry (issue 27 point 4): two servers in one process,
built from the very same Settings object, never see each other's regions, and one
stopping leaves the other's registered."""

from __future__ import annotations

import os
import uuid

import orjson
import pytest

from modelplatform import HttpReply, HttpRequest
from modelplatform.testing import InProcessServer, free_port, resolved_settings

SYSTEM = "/v2/systemsharedmemory"


@pytest.fixture
def shm_key():
    key = f"/mp_two_{uuid.uuid4().hex[:12]}"
    descriptor = os.open(f"/dev/shm{key}", os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    os.ftruncate(descriptor, 4096)
    os.close(descriptor)
    yield key
    os.unlink(f"/dev/shm{key}")


async def _call(
    server: InProcessServer, method: str, path: str, region: str = "", body: dict | None = None
) -> HttpReply:
    """One request through the server's own shared-memory routes, as its HTTP front calls them."""
    context = server.context
    template = f"{SYSTEM}/region/{{region}}{path}" if region else f"{SYSTEM}{path}"
    handler = next(
        route.handler
        for route in context.dialects["shared-memory"].routes(context)
        if route.path == template and method in route.methods
    )
    params = {"region": region} if region else {}
    return await handler(HttpRequest(method, template, params, {}, orjson.dumps(body or {})))


async def _names(server: InProcessServer) -> list[str]:
    reply = await _call(server, "GET", "/status")
    assert reply.status == 200 and isinstance(reply.body, bytes)
    return [region["name"] for region in orjson.loads(reply.body)]


async def test_two_servers_with_one_settings_object_keep_their_own_regions(tmp_path, shm_key):
    # One Settings object for both (the metrics plugin is not loaded: no metrics port to share).
    settings = resolved_settings(model_repository=tmp_path, host="127.0.0.1", http_port=free_port(),
                                 grpc_port=free_port(), allow_client_shm=True,
                                 plugins=("oip-rest", "shared-memory"))  # fmt: skip
    first, second = InProcessServer(settings, []), InProcessServer(settings, [])
    assert first.context.settings is second.context.settings
    region = {"key": shm_key, "offset": 0, "byte_size": 4096}
    assert (await _call(first, "POST", "/register", "on_first", region)).status == 200
    assert (await _call(second, "POST", "/register", "on_second", region)).status == 200

    assert await _names(first) == ["on_first"]
    assert await _names(second) == ["on_second"]
    await first.running.stop()  # its shutdown forgets its own regions, not the other server's
    assert await _names(second) == ["on_second"]
    await second.running.stop()
