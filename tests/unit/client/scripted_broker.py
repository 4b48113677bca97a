"""A scripted in-process broker on 127.0.0.1 for client unit tests: real sockets and the
real protocol codec, answers chosen by a test function."""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Callable
from typing import Any

from common.protocol.api_keys import ApiKey
from common.protocol.codec import (
    RequestHeader,
    decode_request,
    encode_response,
    unsupported_version_response,
)
from common.protocol.errors import UnsupportedVersionError

Handler = Callable[[RequestHeader, dict[str, Any]], bytes | None]


class ScriptedBroker:
    """Serves each connection on its own thread and answers each request with ``handler``'s
    bytes (None = no answer; the handler runs on connection threads). Records the
    (api_key, api_version) of every request."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.requests: list[tuple[int, int]] = []
        self.server = socket.create_server(("127.0.0.1", 0))
        self.server.settimeout(0.2)
        self.port = self.server.getsockname()[1]
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._workers: list[threading.Thread] = []
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            worker = threading.Thread(target=self._connection, args=(conn,), daemon=True)
            self._workers.append(worker)
            worker.start()

    def _connection(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(0.2)
            buf = b""
            while not self._stop.is_set():
                try:
                    chunk = conn.recv(65536)
                except TimeoutError:
                    continue
                except OSError:
                    return
                if not chunk:
                    return
                buf += chunk
                while len(buf) >= 4 and len(buf) >= 4 + struct.unpack(">i", buf[:4])[0]:
                    size = struct.unpack(">i", buf[:4])[0]
                    frame, buf = buf[4 : 4 + size], buf[4 + size :]
                    try:
                        header, body = decode_request(frame)
                    except UnsupportedVersionError as e:
                        header, body = e.header, {}
                    with self._lock:
                        self.requests.append((header.api_key, header.api_version))
                    answer = self.handler(header, body)
                    if answer is not None:
                        conn.sendall(answer)

    def count(self, api_key: int) -> int:
        with self._lock:
            return sum(1 for key, _version in self.requests if key == api_key)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        for worker in self._workers:
            worker.join(5)
        self.server.close()


def answer_v0_fallback(header: RequestHeader, body: dict[str, Any]) -> bytes | None:
    """ApiVersions answered as an old broker would (v0 body, UNSUPPORTED_VERSION)."""
    if header.api_key == ApiKey.API_VERSIONS:
        return unsupported_version_response(header).to_bytes()
    if header.api_key == ApiKey.METADATA:
        return metadata_response(header, port=1)
    return None  # no answer: the request times out


def metadata_response(header: RequestHeader, port: int, partitions: int = 1) -> bytes:
    """Broker 7 at 127.0.0.1:``port`` leads every partition of topic "t"."""
    return encode_response(
        header,
        {
            "brokers": [{"node_id": 7, "host": "127.0.0.1", "port": port}],
            "cluster_id": "c",
            "controller_id": 7,
            "topics": [
                {
                    "error_code": 0,
                    "name": "t",
                    "is_internal": False,
                    "partitions": [
                        {
                            "error_code": 0,
                            "partition_index": i,
                            "leader_id": 7,
                            "leader_epoch": 3,
                            "replica_nodes": [7],
                            "isr_nodes": [7],
                            "offline_replicas": [],
                        }
                        for i in range(partitions)
                    ],
                }
            ],
        },
    ).to_bytes()
