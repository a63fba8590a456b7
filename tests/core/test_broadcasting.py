"""Broadcast: what a sibling's publication does here, and publishing without siblings."""

from __future__ import annotations

import asyncio

from modelplatform import Broadcast


class Siblings:
    def __init__(self, errors: tuple[str, ...]) -> None:
        self.errors = errors
        self.published: list[tuple[str, object]] = []

    async def publish(self, topic: str, payload: object) -> tuple[str, ...]:
        self.published.append((topic, payload))
        return self.errors


def test_a_publication_runs_the_topics_applier():
    seen: list[object] = []
    broadcast = Broadcast()
    broadcast.subscribe("trace", seen.append)
    assert broadcast.deliver("trace", {"trace_rate": ["7"]}) is None
    assert seen == [{"trace_rate": ["7"]}]


def test_an_unknown_topic_or_a_failing_applier_is_reported_not_raised():
    broadcast = Broadcast()

    def refuse(payload: object) -> None:
        raise ValueError("bad level")

    broadcast.subscribe("logging", refuse)
    assert broadcast.deliver("logging", {}) == "ValueError: bad level"
    assert broadcast.deliver("nobody", {}) == "no subscriber for 'nobody'"


def test_publish_hands_the_payload_to_the_siblings_and_survives_their_errors():
    siblings = Siblings(("worker 1: ValueError: bad level",))
    asyncio.run(Broadcast(siblings).publish("logging", {"log_info": False}))
    assert siblings.published == [("logging", {"log_info": False})]
    asyncio.run(Broadcast(None).publish("logging", {}))  # no siblings: nothing to do
