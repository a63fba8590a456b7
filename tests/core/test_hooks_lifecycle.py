"""``configure``, ``startup`` and ``shutdown`` keep what hookspecs.py promises, on a real
in-process server."""

from __future__ import annotations

import asyncio

import pytest
from structlog.testing import capture_logs

from modelplatform import Settings, hookimpl
from modelplatform.testing import InProcessServer, free_port


def _settings(tmp_path) -> Settings:
    return Settings(model_repository=tmp_path, host="127.0.0.1", http_port=free_port(),
                    grpc_port=free_port(), plugins=("oip-rest",))  # fmt: skip


@pytest.mark.hook("configure")
async def test_configure_runs_once_per_server_with_its_own_context_before_anything_opens(tmp_path):
    seen: list[tuple[int, bool]] = []

    class PerServer:
        @staticmethod
        @hookimpl
        def configure(server):
            # Nothing is served yet: no model loaded, the server not accepting.
            seen.append(
                (
                    server.settings.http_port,
                    server.dataplane.health.accepting or bool(server.dataplane.repository.index()),
                )
            )
            server.shared(list, list).append(server.settings.http_port)

    first = InProcessServer(_settings(tmp_path), [PerServer])
    second = InProcessServer(_settings(tmp_path), [PerServer])
    ports = [server.context.settings.http_port for server in (first, second)]
    assert seen == [(ports[0], False), (ports[1], False)]
    assert [server.context.shared(list, list) for server in (first, second)] == [[ports[0]], [ports[1]]]


@pytest.mark.hook("configure")
async def test_a_failing_configure_stops_the_server_from_being_built(tmp_path):
    class Broken:
        @staticmethod
        @hookimpl
        def configure(server):
            raise RuntimeError("cannot set up")

    with pytest.raises(RuntimeError, match="cannot set up"):
        InProcessServer(_settings(tmp_path), [Broken])


@pytest.mark.hook("startup")
async def test_startup_runs_and_is_awaited_before_the_server_reports_started(tmp_path):
    seen: list[str] = []

    class Warmup:
        @staticmethod
        @hookimpl
        async def startup(server):
            await asyncio.sleep(0)  # a real await: the result must be awaited, not dropped
            seen.append(f"started on {server.settings.http_port}")

    settings = _settings(tmp_path)
    with capture_logs() as logs:
        async with InProcessServer(settings, [Warmup]):
            assert seen == [f"started on {settings.http_port}"]
            events = [entry["event"] for entry in logs]
            assert events.index("server_started") > 0 and "server_stopped" not in events
    assert seen == [f"started on {settings.http_port}"]


@pytest.mark.hook("startup")
async def test_a_failing_startup_stops_the_server_from_starting(tmp_path):
    class Broken:
        @staticmethod
        @hookimpl
        def startup(server):
            raise RuntimeError("cannot warm up")

    server = InProcessServer(_settings(tmp_path), [Broken])
    with capture_logs() as logs:
        with pytest.raises(RuntimeError, match="cannot warm up"):
            await server.__aenter__()
        assert not server.context.dataplane.health.accepting
        await server.running.stop()
    assert "server_started" not in [entry["event"] for entry in logs]


def _shutdown_plugins(calls: list[str], failure: str):
    """Two plugins: ``Recorder`` is registered first, so pluggy calls ``Raiser`` before it."""

    class Recorder:
        @staticmethod
        @hookimpl
        async def shutdown(server):
            await asyncio.sleep(0)
            calls.append(f"recorder on {server.settings.http_port}")

    class Raiser:
        @staticmethod
        @hookimpl
        def shutdown(server):
            calls.append("raiser")
            if failure == "raises":
                raise RuntimeError("cannot flush")
            return _fail_later()

    return [Recorder, Raiser]


async def _fail_later() -> None:
    await asyncio.sleep(0)
    raise OSError("flush failed")


@pytest.mark.hook("shutdown")
@pytest.mark.parametrize(("failure", "error"), [
    ("raises", "RuntimeError: cannot flush"),
    ("awaitable fails", "OSError: flush failed"),
])  # fmt: skip
async def test_a_failing_shutdown_is_logged_and_the_others_still_run(tmp_path, failure, error):
    calls: list[str] = []
    settings = _settings(tmp_path)
    with capture_logs() as logs:
        async with InProcessServer(settings, _shutdown_plugins(calls, failure)):
            assert calls == []
    # pluggy would have stopped at the raiser; the recorder still ran after it.
    assert calls == ["raiser", f"recorder on {settings.http_port}"]
    failed = [entry for entry in logs if entry["event"] == "plugin_shutdown_failed"]
    assert [(entry["plugin"], entry["error"]) for entry in failed] == [("Raiser", error)]
    assert [entry["event"] for entry in logs][-1] == "server_stopped"
