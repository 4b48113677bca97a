"""Fixtures for the toxiproxy server tests: the server in-process, a real echo server as the
upstream, and the toxiproxy-python client pointed at the server (its address is class-level
state of the client library, so it is set per test and restored after)."""

from __future__ import annotations

import contextlib
import socket
import socketserver
import threading
import time
from collections.abc import Iterator

import pytest
from toxiproxy import Toxiproxy
from toxiproxy.api import APIConsumer

from chaos.toxiproxy import ToxiproxyServer, serve

IO_TIMEOUT_S = 10.0


class _EchoHandler(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        server: EchoServer = self.server  # type: ignore[assignment]
        received = 0
        try:
            while True:
                data = self.request.recv(65536)
                if not data:
                    break
                received += len(data)
                self.request.sendall(data)
        except OSError:
            pass
        finally:
            with server.lock:
                server.received.append(received)
            server.connection_closed.set()


class EchoServer(socketserver.ThreadingTCPServer):
    """Echoes every byte back; records the bytes each connection delivered."""

    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _EchoHandler)
        self.lock = threading.Lock()
        self.received: list[int] = []
        self.connection_closed = threading.Event()

    @property
    def address(self) -> str:
        host, port = self.server_address[:2]
        return f"{host}:{port}"


@pytest.fixture(name="echo")
def echo_fixture() -> Iterator[EchoServer]:
    server = EchoServer()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(IO_TIMEOUT_S)


@pytest.fixture(name="server")
def server_fixture() -> Iterator[ToxiproxyServer]:
    handle = serve("127.0.0.1", 0, seed=7)
    saved = (APIConsumer.host, APIConsumer.port)
    APIConsumer.host, APIConsumer.port = handle.host, handle.port
    try:
        yield handle
    finally:
        APIConsumer.host, APIConsumer.port = saved
        handle.stop()


@pytest.fixture(name="client")
def client_fixture(server: ToxiproxyServer) -> Toxiproxy:
    return Toxiproxy()


@pytest.fixture(name="connect")
def connect_fixture() -> Iterator[object]:
    """connect("host:port") -> a socket closed at teardown."""
    opened: list[socket.socket] = []

    def _connect(address: str) -> socket.socket:
        host, port = address.rsplit(":", 1)
        sock = socket.create_connection((host, int(port)), timeout=IO_TIMEOUT_S)
        opened.append(sock)
        return sock

    yield _connect
    for sock in opened:
        sock.close()


def recv_exactly(sock: socket.socket, n: int) -> bytes:
    data = bytearray()
    deadline = time.monotonic() + IO_TIMEOUT_S
    while len(data) < n:
        if time.monotonic() > deadline:
            raise TimeoutError(f"received {len(data)} of {n} bytes")
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError(f"closed after {len(data)} of {n} bytes")
        data += chunk
    return bytes(data)


def recv_until_closed(sock: socket.socket) -> tuple[bytes, str]:
    """Everything until the peer closes; returns (data, "eof" | "reset")."""
    data = bytearray()
    deadline = time.monotonic() + IO_TIMEOUT_S
    while time.monotonic() < deadline:
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            return bytes(data), "reset"
        if not chunk:
            return bytes(data), "eof"
        data += chunk
    raise TimeoutError("the connection stayed open")


def round_trip_s(sock: socket.socket, payload: bytes) -> float:
    start = time.monotonic()
    sock.sendall(payload)
    assert recv_exactly(sock, len(payload)) == payload
    return time.monotonic() - start


def refused(address: str) -> bool:
    host, port = address.rsplit(":", 1)
    try:
        with contextlib.closing(socket.create_connection((host, int(port)), timeout=2)) as s:
            # Accepted by the kernel but closed by the proxy also counts as not served.
            s.settimeout(2)
            s.sendall(b"?")
            return s.recv(1) == b""
    except (ConnectionRefusedError, ConnectionResetError):
        return True
