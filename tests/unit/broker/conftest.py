from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.unit.broker.harness import BrokerHarness


@pytest.fixture(params=["asyncio", "uvloop"])
def broker(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BrokerHarness]:
    """An in-process broker on each event loop the server supports."""
    if request.param == "uvloop":
        pytest.importorskip("uvloop")
    h = BrokerHarness(tmp_path, event_loop=request.param)
    yield h
    h.close()
