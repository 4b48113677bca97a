"""The client's connection layer against a scripted in-process broker on 127.0.0.1 (the
protocol codec on both sides): ApiVersions negotiation, pipelining, timeouts, bad answers."""

from __future__ import annotations

import importlib.metadata
import socket
import time
from collections.abc import Callable
from typing import Any

import pytest

from common.protocol.api_keys import ApiKey
from common.protocol.codec import (
    RequestHeader,
    api_versions_entries,
    encode_response,
    unsupported_version_response,
)
from common.protocol.messages.api_versions import ApiVersionsRequest, ApiVersionsResponse
from common.protocol.messages.list_offsets import ListOffsetsRequest
from common.version import KRAFTLOG_VERSION
from kraftlog_client.config import ConsumerConfig, client_config
from kraftlog_client.errors import KafkaConnectionError, KafkaTimeoutError
from kraftlog_client.network_client import NetworkClient
from tests.unit.client.scripted_broker import Handler, ScriptedBroker, answer_v0_fallback


def client_for(port: int, **props: object) -> NetworkClient:
    config = client_config(
        ConsumerConfig,
        {"bootstrap.servers": f"127.0.0.1:{port}", **{k: str(v) for k, v in props.items()}},
    )
    return NetworkClient(config)


def test_negotiates_versions_after_a_v0_fallback_and_reads_metadata(
    broker_factory: Callable[[Handler], ScriptedBroker],
) -> None:
    broker = broker_factory(answer_v0_fallback)
    client = client_for(broker.port)
    try:
        response = client.fetch_metadata(["t"], 10_000)
        assert response["cluster_id"] == "c"
        assert client.metadata.partition_count("t") == 1
        assert client.metadata.broker(7) is not None
        # The v3 probe (it names the client's software); an old broker's v0 fallback lists its
        # versions all the same.
        assert broker.requests[0] == (ApiKey.API_VERSIONS, 3)
        # The highest version both sides speak: Metadata 9, flexible (ours 1-9, the codec's).
        assert (ApiKey.METADATA, 9) in broker.requests
        assert client.version_for(-1, ApiKey.PRODUCE) == 9  # flexible
        assert client.version_for(-1, ApiKey.FETCH) == 12
    finally:
        client.close()


def test_pipelined_requests_complete_in_order(
    broker_factory: Callable[[Handler], ScriptedBroker],
) -> None:
    broker = broker_factory(answer_v0_fallback)
    client = client_for(broker.port)
    try:
        client.fetch_metadata(["t"], 10_000)
        done: list[int] = []
        for i in range(5):
            client.send(
                -1,
                ApiKey.METADATA,
                {"topics": [{"name": "t"}]},
                lambda body, err, i=i: done.append(i),
            )
        deadline = time.monotonic() + 10
        while len(done) < 5 and time.monotonic() < deadline:
            client.poll(0.1)
        assert done == [0, 1, 2, 3, 4]
    finally:
        client.close()


def test_a_request_without_answer_times_out_and_fails_its_callback(
    broker_factory: Callable[[Handler], ScriptedBroker],
) -> None:
    broker = broker_factory(answer_v0_fallback)
    client = client_for(broker.port, **{"request.timeout.ms": 300})
    try:
        client.fetch_metadata(["t"], 10_000)
        with pytest.raises(KafkaTimeoutError):
            client.request(-1, ApiKey.LIST_OFFSETS, ListOffsetsRequest(replica_id=-1), 5_000)
    finally:
        client.close()


def test_a_wrong_correlation_id_closes_the_connection(
    broker_factory: Callable[[Handler], ScriptedBroker],
) -> None:
    def lying(header: RequestHeader, body: dict[str, Any]) -> bytes | None:
        if header.api_key == ApiKey.API_VERSIONS:
            return unsupported_version_response(header).to_bytes()
        wrong = RequestHeader(
            header.api_key, header.api_version, header.correlation_id + 9, header.client_id
        )
        return encode_response(wrong, {"brokers": [], "topics": []}).to_bytes()

    broker = broker_factory(lying)
    client = client_for(broker.port)
    try:
        with pytest.raises(KafkaConnectionError, match="correlation id"):
            client.request(-1, ApiKey.METADATA, {"topics": []}, 10_000)
    finally:
        client.close()


def test_no_broker_listening_times_out() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, never listening: connections are refused
        client = client_for(port, **{"retry.backoff.ms": 20})
        try:
            with pytest.raises(KafkaTimeoutError):
                client.fetch_metadata(None, 500)
        finally:
            client.close()


def test_a_wakeup_before_poll_makes_the_next_poll_return_at_once() -> None:
    # The sender drains the accumulator, then polls: a record appended in between wakes it
    # while it is not yet blocked. That wakeup must not be lost (the poll would sleep its
    # whole timeout with a batch ready).
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        client = client_for(s.getsockname()[1])
        try:
            client.wakeup()
            began = time.monotonic()
            client.poll(5.0)
            assert time.monotonic() - began < 1.0
            began = time.monotonic()
            client.poll(0.2)  # consumed: this one waits
            assert time.monotonic() - began >= 0.15
        finally:
            client.close()


def test_the_probe_names_the_client_software(
    broker_factory: Callable[[Handler], ScriptedBroker],
) -> None:
    seen: list[ApiVersionsRequest] = []

    def answer(header: RequestHeader, body: Any) -> bytes | None:
        if header.api_key == ApiKey.API_VERSIONS:
            seen.append(body)
            return encode_response(
                header, ApiVersionsResponse(error_code=0, api_keys=api_versions_entries())
            ).to_bytes()
        return answer_v0_fallback(header, body)

    broker = broker_factory(answer)
    client = client_for(broker.port)
    try:
        client.fetch_metadata(["t"], 10_000)
        assert seen == [ApiVersionsRequest("kraftlog-python", KRAFTLOG_VERSION)]
        assert client.version_for(-1, ApiKey.API_VERSIONS) == 3
    finally:
        client.close()


def test_the_version_is_the_package_version() -> None:
    assert importlib.metadata.version("kraftlog") == KRAFTLOG_VERSION
