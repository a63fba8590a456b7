"""The ``--workers`` wire in one process: authenticated joins, ordered channels, relayed answers.

The end-to-end behaviour (real worker processes) is tests/e2e/test_workers.py.
"""

from __future__ import annotations

import asyncio
import secrets
import tempfile
from multiprocessing import AuthenticationError, Pipe
from multiprocessing.connection import Client, Connection
from pathlib import Path

import pytest

from modelplatform import InvalidArgument
from modelplatform.frontends.cluster import ClusterAddress, SiblingLink
from modelplatform.frontends.cluster.channel import Channel
from modelplatform.frontends.cluster.listener import WorkerListener
from modelplatform.frontends.cluster.relay import Relay
from modelplatform.frontends.cluster.wire import (
    Applied,
    Apply,
    Hello,
    Message,
    Readiness,
    StatisticsAnswer,
    StatisticsQuery,
)
from modelplatform.models.stats import ModelStats


@pytest.fixture
def address():
    with tempfile.TemporaryDirectory(prefix="modelplatform-test-") as folder:
        yield ClusterAddress(str(Path(folder) / "cluster.sock"), secrets.token_bytes(32))


async def _eventually(condition, timeout: float = 5.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "condition never held"
        await asyncio.sleep(0.01)


def _connect(path: str, authkey: bytes, index: int) -> Connection:
    connection = Client(path, "AF_UNIX", authkey=authkey)
    connection.send(Hello(index))
    return connection


async def test_a_connection_with_a_wrong_authkey_is_refused_and_cannot_join(address):
    joined: list[int] = []
    listener = WorkerListener(address, 1, lambda index, connection: joined.append(index))
    listener.start()
    try:
        with pytest.raises(AuthenticationError):
            await asyncio.to_thread(_connect, address.path, b"not the key", 7)
        await asyncio.sleep(0.1)
        assert joined == []
        connection = await asyncio.to_thread(_connect, address.path, address.authkey, 3)
        await _eventually(lambda: joined == [3])
        connection.close()
    finally:
        listener.close()


def test_the_authkey_never_shows_in_a_repr(address):
    assert address.authkey.hex() not in repr(address)
    assert str(address.authkey) not in repr(address)


async def test_a_channel_keeps_order_and_both_ends_see_it_close():
    left, right = Pipe()
    received: list[Message] = []
    closed: list[str] = []
    sender = Channel(left, received.append, lambda: closed.append("sender"))
    receiver = Channel(right, received.append, lambda: closed.append("receiver"))
    sender.start()
    receiver.start()
    for ready in [True, False] * 50:
        sender.send(Readiness(ready))
    sender.close()
    await _eventually(lambda: sorted(closed) == ["receiver", "sender"])
    assert received == [Readiness(r) for r in [True, False] * 50]


async def _cluster(address: ClusterAddress, count: int) -> tuple[WorkerListener, list[SiblingLink]]:
    relay = Relay(count)

    def joined(index: int, connection: Connection) -> None:
        channel = Channel(connection, lambda m: relay.received(index, m), lambda: relay.left(index))
        relay.joined(index, channel)
        channel.start()

    listener = WorkerListener(address, count, joined)
    listener.start()
    links = [SiblingLink(index, count) for index in range(count)]
    return listener, links


async def test_an_operation_failing_on_a_sibling_fails_at_the_origin(address):
    listener, (origin, sibling) = await _cluster(address, 2)

    def apply(message: Message) -> None:
        if isinstance(message, Apply):
            sibling.send(Applied(message.op_id, f"cannot {message.operation.kind} here"))

    try:
        await origin.connect(address, lambda message: None)
        await sibling.connect(address, apply)
        await asyncio.sleep(0.1)  # both joined the relay
        with pytest.raises(InvalidArgument, match="worker 1: cannot unload here"):
            await origin.replicate("unload", "m", None, [])
    finally:
        origin.close()
        sibling.close()
        listener.close()


async def test_statistics_come_back_from_every_sibling(address):
    listener, links = await _cluster(address, 3)
    counted = ModelStats("m", "1", inference_count=5)

    def answer(link: SiblingLink):
        def handle(message: Message) -> None:
            if isinstance(message, StatisticsQuery):
                link.send(StatisticsAnswer(message.query_id, (counted,)))

        return handle

    try:
        for link in links:
            await link.connect(address, answer(link))
        await asyncio.sleep(0.1)
        parts = await links[0].statistics("m", "1")
        assert [[s.inference_count for s in part] for part in parts] == [[5], [5]]
    finally:
        for link in links:
            link.close()
        listener.close()


async def test_an_unconnected_link_asks_nobody():
    link = SiblingLink(0, 2)
    assert await link.statistics("m", "") == []
    await link.replicate("load", "m", None, [])  # returns at once: no siblings to ask
