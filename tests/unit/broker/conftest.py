from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.unit.broker.harness import BrokerHarness
from tests.unit.broker.wire import WireClient


@pytest.fixture(params=["asyncio", "uvloop"])
def broker(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BrokerHarness]:
    """An in-process broker on each event loop the server supports."""
    if request.param == "uvloop":
        pytest.importorskip("uvloop")
    h = BrokerHarness(tmp_path, event_loop=request.param)
    yield h
    h.close()


@pytest.fixture
def client(broker: BrokerHarness) -> Iterator[WireClient]:
    """A wire client of ``broker``, which has topic ``t`` with 2 partitions."""
    broker.set_topics({"t": 2})
    c = WireClient(broker.port)
    yield c
    c.close()
