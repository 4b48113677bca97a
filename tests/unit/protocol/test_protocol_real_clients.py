"""Real clients against the codec alone: librdkafka (confluent-kafka) and kafka-python fetch
metadata from a minimal 127.0.0.1 server built only from FrameReader and the codec.

This checks, with the clients' own code rather than their class libraries, that their
flexible ApiVersions probe (v3 / v4) is answered in kind, in a form they accept, and that they
parse our Metadata responses. The server answers ApiVersions and
Metadata only; it is a test harness for the codec, not a broker.
"""

from __future__ import annotations

import socket
import threading
import warnings
from collections.abc import Iterator

import pytest

from common.protocol import codec
from common.protocol.api_keys import ApiKey
from common.protocol.errors import ProtocolError, UnsupportedVersionError
from common.protocol.framing import FrameReader
from common.protocol.messages.api_versions import ApiVersionsResponse

POLL_S = 0.2


class MetadataOnlyServer:
    """Accepts connections on 127.0.0.1 and answers ApiVersions and Metadata (one topic,
    ``orders``, with two partitions led by node 1 = this server). Records what it decoded."""

    def __init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(POLL_S)
        self.port = self._listener.getsockname()[1]
        self.requests: list[tuple[int, int, str]] = []
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._start(self._accept_loop)

    def _start(self, target, *args) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True)
        self._threads.append(thread)
        thread.start()

    def _accept_loop(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            conn.settimeout(POLL_S)
            self._start(self._serve, conn)

    def _serve(self, conn: socket.socket) -> None:
        reader = FrameReader()
        with conn:
            while not self._stop.is_set():
                try:
                    data = conn.recv(65536)
                except TimeoutError:
                    continue
                except OSError:
                    return
                if not data:
                    return
                for frame in reader.feed(data):
                    if not self._answer(conn, frame):
                        return

    def _answer(self, conn: socket.socket, frame) -> bool:
        try:
            header, _body = codec.decode_request(frame)
        except UnsupportedVersionError as exc:
            self.requests.append((exc.header.api_key, exc.header.api_version, "unsupported"))
            conn.sendall(codec.unsupported_version_response(exc.header).to_bytes())
            return exc.header.api_key == ApiKey.API_VERSIONS
        except ProtocolError:
            self.requests.append((-1, -1, "malformed"))
            return False
        self.requests.append((header.api_key, header.api_version, "ok"))
        if header.api_key == ApiKey.API_VERSIONS:
            body = ApiVersionsResponse(error_code=0, api_keys=codec.api_versions_entries())
        elif header.api_key == ApiKey.METADATA:
            body = self._metadata()
        else:
            conn.sendall(codec.unsupported_version_response(header).to_bytes())
            return False
        conn.sendall(codec.encode_response(header, body).to_bytes())
        return True

    def _metadata(self) -> dict:
        partitions = [
            {
                "error_code": 0,
                "partition_index": index,
                "leader_id": 1,
                "leader_epoch": 3,
                "replica_nodes": [1],
                "isr_nodes": [1],
                "offline_replicas": [],
            }
            for index in range(2)
        ]
        return {
            "brokers": [{"node_id": 1, "host": "127.0.0.1", "port": self.port, "rack": None}],
            "cluster_id": "codec-test",
            "controller_id": 1,
            "topics": [
                {"error_code": 0, "name": "orders", "is_internal": False, "partitions": partitions}
            ],
        }

    def close(self) -> None:
        self._stop.set()
        self._listener.close()
        for thread in self._threads:
            thread.join(timeout=5)


@pytest.fixture
def server() -> Iterator[MetadataOnlyServer]:
    srv = MetadataOnlyServer()
    try:
        yield srv
    finally:
        srv.close()


def test_librdkafka_probe_is_answered_and_metadata_read(server):
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{server.port}", "log_level": 0})
    metadata = admin.list_topics(timeout=30)
    assert sorted(metadata.topics["orders"].partitions) == [0, 1]
    assert metadata.topics["orders"].partitions[1].leader == 1
    assert metadata.cluster_id == "codec-test"
    # librdkafka's first request is the flexible ApiVersions v3 probe, answered in kind (no
    # fallback round trip), and it never sent anything we could not decode.
    assert server.requests[0] == (ApiKey.API_VERSIONS, 3, "ok")
    assert any(r[0] == ApiKey.METADATA and r[2] == "ok" for r in server.requests)
    assert all(r[2] != "malformed" for r in server.requests)


def test_kafka_python_probe_is_answered_and_metadata_read(server):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from kafka import KafkaConsumer
    consumer = KafkaConsumer(
        bootstrap_servers=f"127.0.0.1:{server.port}",
        request_timeout_ms=30000,
    )
    try:
        assert consumer.topics() == {"orders"}
        assert consumer.partitions_for_topic("orders") == {0, 1}
    finally:
        consumer.close()
    assert server.requests[0] == (ApiKey.API_VERSIONS, 4, "ok")
    assert (ApiKey.METADATA, 12, "ok") in server.requests  # flexible, with topic ids
    assert all(r[2] != "malformed" for r in server.requests)
