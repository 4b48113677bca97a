"""A request may wait longer than request.timeout.ms when the caller says so (JoinGroup waits
a whole rebalance); the default still applies to every other request."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from common.protocol.api_keys import ApiKey
from common.protocol.codec import RequestHeader, unsupported_version_response
from common.protocol.messages.join_group import JoinGroupRequest
from kraftlog_client.config import ConsumerConfig, client_config
from kraftlog_client.errors import KafkaTimeoutError
from kraftlog_client.network_client import NetworkClient
from tests.unit.client.scripted_broker import ScriptedBroker, metadata_response


def silent_coordinator(holder: list[ScriptedBroker]) -> Callable[..., bytes | None]:
    def handler(header: RequestHeader, body: dict[str, Any]) -> bytes | None:
        if header.api_key == ApiKey.API_VERSIONS:
            return unsupported_version_response(header).to_bytes()
        if header.api_key == ApiKey.METADATA:
            return metadata_response(header, port=holder[0].port)
        return None  # JoinGroup: never answered

    return handler


def test_a_longer_timeout_for_one_request(broker_factory: Callable[..., ScriptedBroker]) -> None:
    holder: list[ScriptedBroker] = []
    holder.append(broker_factory(silent_coordinator(holder)))
    config = client_config(
        ConsumerConfig,
        {"bootstrap.servers": f"127.0.0.1:{holder[0].port}", "request.timeout.ms": "200"},
    )
    client = NetworkClient(config)
    try:
        client.fetch_metadata([], 5000)
        deadline = time.monotonic() + 10
        while not client.is_ready(7):
            assert time.monotonic() < deadline
            client.poll(0.05)
        results: list[tuple[Any, Any]] = []
        body = JoinGroupRequest(
            group_id="g",
            session_timeout_ms=6000,
            rebalance_timeout_ms=6000,
            member_id="",
            group_instance_id=None,
            protocol_type="consumer",
            protocols=[],
        )
        client.send(
            7, ApiKey.JOIN_GROUP, body, lambda r, e: results.append((r, e)), timeout_ms=3000
        )
        waited_until = time.monotonic() + 1.0  # five default timeouts
        while time.monotonic() < waited_until:
            client.poll(0.05)
        assert results == []
        while not results:
            assert time.monotonic() < deadline, "the longer timeout never fired"
            client.poll(0.05)
        assert isinstance(results[0][1], KafkaTimeoutError)
    finally:
        client.close()
