"""Fixtures of the client unit tests."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from tests.unit.client.scripted_broker import Handler, ScriptedBroker


@pytest.fixture
def broker_factory() -> Iterator[Callable[[Handler], ScriptedBroker]]:
    brokers: list[ScriptedBroker] = []

    def make(handler: Handler) -> ScriptedBroker:
        b = ScriptedBroker(handler)
        brokers.append(b)
        return b

    yield make
    for b in brokers:
        b.close()
