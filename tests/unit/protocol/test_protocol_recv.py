"""recv_chunk: reads through a per-thread scratch buffer and returns exactly what arrived."""

from __future__ import annotations

import socket
import threading

import pytest

from common.protocol.recv import SCRATCH_BYTES, recv_chunk


def _pair() -> tuple[socket.socket, socket.socket]:
    a, b = socket.socketpair()
    b.setblocking(False)
    return a, b


def test_returns_what_arrived_bounded_by_max_bytes() -> None:
    a, b = _pair()
    with a, b:
        a.sendall(b"hello world")
        assert recv_chunk(b, 5) == b"hello"
        assert recv_chunk(b, 1000) == b" world"
        with pytest.raises(BlockingIOError):
            recv_chunk(b, 1000)
        a.shutdown(socket.SHUT_WR)
        assert recv_chunk(b, 1000) == b""


def test_never_more_than_the_scratch_buffer() -> None:
    a, b = _pair()
    with a, b:
        payload = bytes(range(256)) * (SCRATCH_BYTES // 256 + 10)
        sender = threading.Thread(target=a.sendall, args=(payload,))
        sender.start()
        got = bytearray()
        b.setblocking(True)
        while len(got) < len(payload):
            chunk = recv_chunk(b, 10 * SCRATCH_BYTES)
            assert 0 < len(chunk) <= SCRATCH_BYTES
            got += chunk
        sender.join()
        assert bytes(got) == payload


def test_returned_bytes_survive_later_reads_and_other_threads() -> None:
    a, b = _pair()
    with a, b:
        a.sendall(b"first")
        first = recv_chunk(b, 100)
        results: list[bytes] = []

        def other_thread() -> None:
            c, d = _pair()
            with c, d:
                c.sendall(b"XXXXXXXX")
                results.append(recv_chunk(d, 100))

        t = threading.Thread(target=other_thread)
        t.start()
        t.join()
        a.sendall(b"second")
        second = recv_chunk(b, 100)
        assert (first, second, results) == (b"first", b"second", [b"XXXXXXXX"])
