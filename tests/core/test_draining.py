"""The drain's pieces: its settings, the phase it moves through, ending calls, Connection: close."""

from __future__ import annotations

import asyncio

import pytest

from modelplatform import HttpReply, InvalidArgument
from modelplatform.base.settings import resolve
from modelplatform.dataplane.draining import Drain, Phase, ServerShuttingDown
from modelplatform.frontends.http.fastlane import head_bytes


def test_drain_settings_default_for_kubernetes_and_are_bounded():
    settings = resolve(env={})
    assert (settings.drain_delay_secs, settings.exit_timeout_secs) == (5.0, 30.0)
    assert resolve(env={"MODELPLATFORM_DRAIN_DELAY_SECS": "0"}).drain_delay_secs == 0.0
    for name, value in (("drain_delay_secs", -1), ("exit_timeout_secs", 1e9)):
        with pytest.raises(InvalidArgument, match=name):
            resolve(env={}, overrides={name: value})


def test_the_phase_only_moves_forward():
    drain = Drain()
    assert not drain.started and not drain.closing
    drain.advance(Phase.CLOSING)
    drain.advance(Phase.DRAINING)
    assert drain.phase is Phase.CLOSING and drain.started and drain.closing


async def test_end_answers_calls_in_flight_and_refuses_new_ones():
    drain = Drain()

    async def call() -> str:
        task = drain.enter()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            if not drain.ended(task):
                raise
            return "ended by the drain"
        finally:
            drain.leave(task)
        return "finished"

    running = asyncio.ensure_future(call())
    await asyncio.sleep(0)
    assert drain.in_flight == 1
    assert drain.end() == 1
    assert await running == "ended by the drain"
    assert drain.in_flight == 0
    with pytest.raises(ServerShuttingDown, match="shutting down"):
        drain.enter()


async def test_a_clients_own_cancellation_stays_a_cancellation():
    drain = Drain()

    async def call() -> None:
        task = drain.enter()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            assert not drain.ended(task)
            raise
        finally:
            drain.leave(task)

    running = asyncio.ensure_future(call())
    await asyncio.sleep(0)
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running


def test_the_fast_lane_says_connection_close_while_closing():
    reply = HttpReply(200, b"{}", "application/json")
    assert b"connection: keep-alive\r\n" in head_bytes(reply, b"")
    closing = head_bytes(reply, b"", keep_alive=False)
    assert b"connection: close\r\n" in closing and b"keep-alive" not in closing
