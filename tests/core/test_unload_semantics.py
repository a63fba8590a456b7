"""Issue 13, points 1 and 2, in process: what a model that is not loaded answers, one index row per version.

Unloaded, never loaded and failed to load all answer ModelNotFound, as an
unknown name does; ModelNotReady (transient, 503) is left for a first load
still running. The index shows each version once, in the state that answers.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from modelplatform import ModelNotFound, ModelNotReady
from modelplatform.testing import InProcessServer

from .test_model_lifecycle import LOADS, UNLOADS, LifecyclePlugin, _config, request, settings, write_model

NO_VERSIONS = "Request for unknown model: 'm' has no available versions"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    LOADS.clear()
    UNLOADS.clear()
    return tmp_path


def rows(models, name: str = "m") -> list[tuple[str, str, str]]:
    return [(e.version, e.state, e.reason) for e in models.index() if e.name == name]


async def until(condition, timeout_s: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "condition never held"
        await asyncio.sleep(0.01)


async def test_every_not_loaded_case_answers_not_found(repo: Path) -> None:
    write_model(repo, "m", versions=(1, 2))
    write_model(repo, "broken", fail="no such weights")
    async with InProcessServer(settings(repo, load_models=("none",)), [LifecyclePlugin]) as server:
        dataplane, models = server.context.dataplane, server.running.models
        for name, text in (("nothing", "'nothing' is not found"), ("m", "'m' is not found")):
            with pytest.raises(ModelNotFound, match=f"^Request for unknown model: {text}$"):
                await dataplane.inference.infer(request(name))  # unknown, and on disk but never loaded
        await models.load("m")
        await models.unload("m")
        for call in (
            lambda: dataplane.inference.infer(request("m")),
            lambda: dataplane.observation.statistics("m"),
        ):
            with pytest.raises(ModelNotFound) as caught:
                await call()
            assert caught.value.message == NO_VERSIONS
        for query in (dataplane.repository.model_metadata, dataplane.repository.model_config):
            with pytest.raises(ModelNotFound, match=f"^{NO_VERSIONS}$"):
                query("m")
            with pytest.raises(ModelNotFound, match="'m' version 2 is not found$"):
                query("m", "2")
        assert not dataplane.health.model_ready("m") and not dataplane.health.model_ready("m", "1")
        with pytest.raises(Exception, match="no such weights"):
            await models.load("broken")
        with pytest.raises(ModelNotFound) as caught:
            dataplane.inference.resolve("broken")
        words = "Request for unknown model: 'broken' has no available versions: "
        assert caught.value.message.startswith(words)
        assert "no such weights" in caught.value.message  # a failed load says why, after the same words


async def test_only_a_first_load_still_running_is_transient(repo: Path) -> None:
    write_model(repo, "m", load_delay="0.5")
    async with InProcessServer(settings(repo, load_models=("none",)), [LifecyclePlugin]) as server:
        dataplane, models = server.context.dataplane, server.running.models
        first = asyncio.ensure_future(models.load("m"))
        await asyncio.sleep(0)  # queued: the load is under way before any version is planned
        with pytest.raises(ModelNotReady, match="^model 'm' has no available versions yet"):
            dataplane.inference.resolve("m")
        await until(lambda: rows(models) == [("1", "LOADING", "")])
        with pytest.raises(ModelNotReady, match="'m' version 1 is not at ready state$"):
            dataplane.inference.resolve("m", "1")
        with pytest.raises(ModelNotFound, match="'m' version 2 is not found$"):
            dataplane.inference.resolve("m", "2")  # not part of this load: never coming
        await first
        await models.unload("m")
        again = asyncio.ensure_future(models.load("m"))
        await until(lambda: rows(models) == [("1", "LOADING", "")])
        with pytest.raises(ModelNotFound, match=f"^{NO_VERSIONS}$"):
            dataplane.inference.resolve("m")  # was READY once: an unloaded model is gone, not busy
        await again
        assert dataplane.inference.resolve("m").ready


async def test_a_reloading_version_shows_ready_on_one_row(repo: Path) -> None:
    folder = write_model(repo, "m")
    async with InProcessServer(settings(repo), [LifecyclePlugin]) as server:
        models = server.running.models
        (folder / "config.pbtxt").write_text(_config("m", factor="3", load_delay="0.5"))
        reload = asyncio.ensure_future(models.load("m"))
        await until(lambda: bool(models._models["m"].loading))
        assert rows(models) == [("1", "READY", "")]  # it still answers while its successor loads
        await reload
        assert rows(models) == [("1", "READY", "")]
        assert (await server.context.dataplane.inference.infer(request("m"))).outputs[0].data.tolist() == [
            3.0,
            3.0,
        ]


async def test_unload_then_load_shows_one_row_in_order(repo: Path) -> None:
    write_model(repo, "m", load_delay="0.3")
    async with InProcessServer(settings(repo), [LifecyclePlugin]) as server:
        models = server.running.models
        await models.unload("m")
        assert rows(models) == [("1", "UNAVAILABLE", "unloaded")]
        load = asyncio.ensure_future(models.load("m"))
        seen: list[list[tuple[str, str, str]]] = []
        while not load.done():
            seen.append(rows(models))
            await asyncio.sleep(0.005)
        await load
        assert all(len(poll) == 1 for poll in seen), seen
        states = [poll[0][1] for poll in seen]
        assert "LOADING" in states and set(states) <= {"UNAVAILABLE", "LOADING", "READY"}
        assert rows(models) == [("1", "READY", "")]


async def test_a_version_a_reload_drops_stays_listed_as_unloaded(repo: Path) -> None:
    folder = write_model(repo, "m", versions=(1, 2))
    async with InProcessServer(settings(repo), [LifecyclePlugin]) as server:
        models = server.running.models
        assert rows(models) == [("2", "READY", "")]
        (folder / "config.pbtxt").write_text(_config("m") + "version_policy { specific { versions: [1] } }\n")
        await models.load("m")
        assert rows(models) == [("1", "READY", ""), ("2", "UNAVAILABLE", "unloaded")]
        with pytest.raises(ModelNotFound, match="'m' version 2 is not found$"):
            models.get("m", "2")
        (folder / "config.pbtxt").write_text(_config("m") + "version_policy { all { } }\n")
        await models.load("m")
        assert rows(models) == [("1", "READY", ""), ("2", "READY", "")]
