"""A minimal blocking Kafka wire client for broker tests (the codec's client side)."""

from __future__ import annotations

import socket
import struct
from typing import Any

from common.protocol.codec import decode_response, encode_request

SOCKET_TIMEOUT_S = 20.0


class WireClient:
    def __init__(self, port: int, host: str = "127.0.0.1") -> None:
        self.sock = socket.create_connection((host, port), timeout=SOCKET_TIMEOUT_S)
        self._correlation = 0

    def close(self) -> None:
        self.sock.close()

    def send(self, api_key: int, version: int, body: dict[str, Any]) -> int:
        self._correlation += 1
        self.sock.sendall(encode_request(api_key, version, self._correlation, "test", body))
        return self._correlation

    def recv_frame(self) -> bytes:
        (size,) = struct.unpack(">i", self._recv_exact(4))
        return self._recv_exact(size)

    def recv(self, api_key: int, version: int) -> tuple[int, dict[str, Any]]:
        return decode_response(api_key, version, self.recv_frame())

    def call(self, api_key: int, version: int, body: dict[str, Any]) -> dict[str, Any]:
        cid = self.send(api_key, version, body)
        got, resp = self.recv(api_key, version)
        if got != cid:
            raise AssertionError(f"correlation id {got}, expected {cid}")
        return resp

    def is_closed_by_peer(self) -> bool:
        """True once the broker has closed the connection (reads EOF within the timeout)."""
        try:
            return self.sock.recv(1) == b""
        except ConnectionResetError:
            return True

    def _recv_exact(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("broker closed the connection")
            buf += chunk
        return bytes(buf)
