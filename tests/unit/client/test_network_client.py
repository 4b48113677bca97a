"""The client's connection layer against a scripted in-process broker on 127.0.0.1 (the
protocol codec on both sides): ApiVersions negotiation, pipelining, timeouts, bad answers."""

from __future__ import annotations

import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from data_plane.client.config import ConsumerConfig, client_config
from data_plane.client.errors import KafkaConnectionError, KafkaTimeoutError
from data_plane.client.network_client import NetworkClient
from data_plane.protocol.api_keys import ApiKey
from data_plane.protocol.codec import (
    RequestHeader,
    decode_request,
    encode_response,
    unsupported_version_response,
)
from data_plane.protocol.exceptions import UnsupportedVersionError

Handler = Callable[[RequestHeader, dict[str, Any]], bytes | None]


class ScriptedBroker:
    """Accepts one connection at a time and answers each request with ``handler``'s bytes
    (None = no answer). Records the (api_key, api_version) of every request."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.requests: list[tuple[int, int]] = []
        self.server = socket.create_server(("127.0.0.1", 0))
        self.server.settimeout(0.2)
        self.port = self.server.getsockname()[1]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.server.accept()
            except TimeoutError:
                continue
            with conn:
                conn.settimeout(0.2)
                buf = b""
                while not self._stop.is_set():
                    try:
                        chunk = conn.recv(65536)
                    except TimeoutError:
                        continue
                    except OSError:
                        break
                    if not chunk:
                        break
                    buf += chunk
                    while len(buf) >= 4 and len(buf) >= 4 + struct.unpack(">i", buf[:4])[0]:
                        size = struct.unpack(">i", buf[:4])[0]
                        frame, buf = buf[4 : 4 + size], buf[4 + size :]
                        try:
                            header, body = decode_request(frame)
                        except UnsupportedVersionError as e:
                            header, body = e.header, {}
                        self.requests.append((header.api_key, header.api_version))
                        answer = self.handler(header, body)
                        if answer is not None:
                            conn.sendall(answer)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self.server.close()


def answer_v0_fallback(header: RequestHeader, body: dict[str, Any]) -> bytes | None:
    """ApiVersions v2 answered as an old broker would (v0 body, UNSUPPORTED_VERSION)."""
    if header.api_key == ApiKey.API_VERSIONS:
        return unsupported_version_response(header).to_bytes()
    if header.api_key == ApiKey.METADATA:
        return encode_response(header, {
            "brokers": [{"node_id": 7, "host": "127.0.0.1", "port": 1}],
            "cluster_id": "c", "controller_id": 7,
            "topics": [{"error_code": 0, "name": "t", "is_internal": False, "partitions": [
                {"error_code": 0, "partition_index": 0, "leader_id": 7, "leader_epoch": 3,
                 "replica_nodes": [7], "isr_nodes": [7], "offline_replicas": []}]}],
        }).to_bytes()
    return None  # no answer: the request times out


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


def client_for(port: int, **props: object) -> NetworkClient:
    config = client_config(ConsumerConfig, {"bootstrap.servers": f"127.0.0.1:{port}",
                                            **{k: str(v) for k, v in props.items()}})
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
        assert broker.requests[0] == (ApiKey.API_VERSIONS, 2)
        # The highest version both sides speak: Metadata 8 (ours 1-8, the codec's 0-8).
        assert (ApiKey.METADATA, 8) in broker.requests
        assert client.version_for(-1, ApiKey.PRODUCE) == 7
        assert client.version_for(-1, ApiKey.FETCH) == 11
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
            client.send(-1, ApiKey.METADATA, {"topics": [{"name": "t"}]},
                        lambda body, err, i=i: done.append(i))
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
            client.request(-1, ApiKey.LIST_OFFSETS, {"replica_id": -1, "topics": []}, 5_000)
    finally:
        client.close()


def test_a_wrong_correlation_id_closes_the_connection(
    broker_factory: Callable[[Handler], ScriptedBroker],
) -> None:
    def lying(header: RequestHeader, body: dict[str, Any]) -> bytes | None:
        if header.api_key == ApiKey.API_VERSIONS:
            return unsupported_version_response(header).to_bytes()
        wrong = RequestHeader(header.api_key, header.api_version, header.correlation_id + 9,
                              header.client_id)
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
