"""Large responses received straight into their own buffer: the sans-IO helper and a real
connection reading pipelined large and small answers from a scripted broker."""

from __future__ import annotations

import os
import struct
import time
from collections.abc import Callable
from typing import Any

import pytest

from common.protocol.api_keys import ApiKey
from common.protocol.codec import RequestHeader, encode_response
from kraftlog_client import broker_connection
from kraftlog_client.config import ConsumerConfig, client_config
from kraftlog_client.large_frame import LARGE_FRAME_BYTES, LargeFrame, find_large_frame
from kraftlog_client.network_client import NetworkClient
from tests.unit.client.scripted_broker import Handler, ScriptedBroker, answer_v0_fallback


def frame(body: bytes) -> bytes:
    return struct.pack(">i", len(body)) + body


def test_find_large_frame_skips_complete_frames_and_ignores_small_or_bad_ones() -> None:
    big = frame(b"x" * 1000)
    assert find_large_frame(big[:500], 1 << 20, 100) == (0, 1000)
    assert find_large_frame(frame(b"ab") + big[:500], 1 << 20, 100) == (6, 1000)
    assert find_large_frame(frame(b"ab") + big, 1 << 20, 100) == (-1, 0)  # all complete
    assert find_large_frame(frame(b"x" * 50)[:20], 1 << 20, 100) == (-1, 0)  # small partial
    assert find_large_frame(big[:500], 999, 100) == (-1, 0)  # too large: the reader raises
    assert find_large_frame(struct.pack(">i", -5) + b"zz", 1 << 20, 1) == (-1, 0)
    assert find_large_frame(b"\x00\x00", 1 << 20, 1) == (-1, 0)  # prefix not yet whole


def test_large_frame_fills_in_place() -> None:
    large = LargeFrame(10, b"abc")
    target = large.unfilled()
    assert len(target) == 7
    target[:4] = b"defg"
    assert not large.advance(4)
    large.unfilled()[:3] = b"hij"
    assert large.advance(3) and bytes(large.frame()) == b"abcdefghij"
    with pytest.raises(ValueError):
        large.advance(1)
    with pytest.raises(ValueError):
        LargeFrame(3, b"abc")


def _fetch_answer(header: RequestHeader, records: bytes) -> bytes:
    return encode_response(
        header,
        {
            "throttle_time_ms": 0,
            "error_code": 0,
            "session_id": 0,
            "responses": [
                {
                    "topic": "t",
                    "partitions": [
                        {
                            "partition_index": 0,
                            "error_code": 0,
                            "high_watermark": 1,
                            "last_stable_offset": 1,
                            "log_start_offset": 0,
                            "aborted_transactions": [],
                            "preferred_read_replica": -1,
                            "records": records,
                        }
                    ],
                }
            ],
        },
    ).to_bytes()


def test_pipelined_large_and_small_responses_arrive_intact_and_in_order(
    broker_factory: Callable[[Handler], ScriptedBroker], monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[int] = []

    class CountedLargeFrame(LargeFrame):
        __slots__ = ()

        def __init__(self, size: int, first_bytes: bytes | memoryview) -> None:
            made.append(size)
            super().__init__(size, first_bytes)

    monkeypatch.setattr(broker_connection, "LargeFrame", CountedLargeFrame)
    payloads = [os.urandom(LARGE_FRAME_BYTES * 3 + i * 7919) for i in range(4)]
    served = iter(payloads)

    def handler(header: RequestHeader, body: dict[str, Any]) -> bytes | None:
        if header.api_key == ApiKey.FETCH:
            return _fetch_answer(header, next(served))
        return answer_v0_fallback(header, body)

    broker = broker_factory(handler)
    config = client_config(ConsumerConfig, {"bootstrap.servers": f"127.0.0.1:{broker.port}"})
    client = NetworkClient(config)
    try:
        client.fetch_metadata(["t"], 10_000)
        fetch = {
            "replica_id": -1,
            "max_wait_ms": 0,
            "min_bytes": 0,
            "max_bytes": 64 << 20,
            "isolation_level": 0,
            "session_id": 0,
            "session_epoch": -1,
            "topics": [
                {
                    "topic": "t",
                    "partitions": [
                        {
                            "partition": 0,
                            "current_leader_epoch": -1,
                            "fetch_offset": 0,
                            "log_start_offset": -1,
                            "partition_max_bytes": 8 << 20,
                        }
                    ],
                }
            ],
            "forgotten_topics_data": [],
            "rack_id": "",
        }
        done: list[tuple[str, Any]] = []
        for _ in range(len(payloads)):
            client.send(
                -1,
                ApiKey.METADATA,
                {"topics": [{"name": "t"}]},
                lambda body, err: done.append(("metadata", err or body["cluster_id"])),
            )
            client.send(
                -1,
                ApiKey.FETCH,
                fetch,
                lambda body, err: done.append(
                    ("fetch", err or bytes(body["responses"][0]["partitions"][0]["records"]))
                ),
            )
        deadline = time.monotonic() + 30
        while len(done) < 2 * len(payloads) and time.monotonic() < deadline:
            client.poll(0.1)
        assert done == [item for p in payloads for item in (("metadata", "c"), ("fetch", p))]
        assert len(made) == len(payloads)  # each fetch answer took the direct path
    finally:
        client.close()
