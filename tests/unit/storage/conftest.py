"""Shared helpers for the storage unit tests."""

from __future__ import annotations

import os

import pytest

from common.log_config import LogConfig
from data_plane.storage.log import Log
from data_plane.storage.record_codec import Record, build_batch


class ManualClock:
    """An injected millisecond clock the test moves by hand."""

    def __init__(self, now_ms: int = 1_700_000_000_000) -> None:
        self.now_ms = now_ms

    def __call__(self) -> int:
        return self.now_ms

    def advance(self, ms: int) -> None:
        self.now_ms += ms


def batch(
    n: int = 1,
    *,
    value_bytes: int = 20,
    timestamp: int = 1000,
    key: bytes | None = b"k",
    compression: int = 0,
    tag: int = 0,
) -> bytearray:
    """A producer batch of ``n`` records; values are distinct per (tag, i)."""
    records = [
        Record(
            key=key,
            value=(b"%d-%d:" % (tag, i)).ljust(value_bytes, b"x"),
            timestamp=timestamp + i,
        )
        for i in range(n)
    ]
    return build_batch(records, compression=compression)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def open_log(tmp_path, clock):
    """Factory opening a Log in tmp_path/t-0 (closed at teardown)."""
    opened: list[Log] = []

    def _open(config: LogConfig | None = None, **kwargs) -> Log:
        log = Log(
            os.path.join(tmp_path, "t-0"),
            config or LogConfig(),
            topic="t",
            partition=0,
            clock_ms=clock,
            **kwargs,
        )
        opened.append(log)
        return log

    yield _open
    for log in opened:
        log.close()
