from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.unit.broker.harness import BrokerHarness


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerHarness]:
    h = BrokerHarness(tmp_path)
    yield h
    h.close()
