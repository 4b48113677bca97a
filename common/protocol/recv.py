"""Receiving from a plain socket without a fresh memory mapping per call.

``sock.recv(n)`` allocates an ``n``-byte buffer, lets the kernel fill part of it and shrinks
it to what arrived. For ``n`` of 128 KiB or more glibc serves that buffer with ``mmap``, the
shrink with ``mremap`` and the free with ``munmap``: three system calls and a page fault per
read, whatever the read's size. The broker and the client read in 256 KiB chunks, so every
small request paid them (strace of a broker answering sequential small Produce requests:
one mmap, mremap and munmap per recvfrom; they were a third of its system calls).

:func:`recv_chunk` reads into a scratch buffer kept per thread (event loops and client
network threads read on one thread at a time) and returns a ``bytes`` copy of exactly what
arrived: a copy of the received bytes from warm memory instead of a fresh mapping. Other
sockets (a TLS wrapper decrypting into its own buffers) are read with their own ``recv``.
"""

from __future__ import annotations

import socket
import threading
from typing import Any

# The scratch buffer's size: the most one call returns.
SCRATCH_BYTES = 256 * 1024

_local = threading.local()


def _scratch() -> memoryview:
    view: memoryview | None = getattr(_local, "view", None)
    if view is None:
        view = _local.view = memoryview(bytearray(SCRATCH_BYTES))
    return view


def recv_chunk(sock: socket.socket | Any, max_bytes: int) -> bytes:
    """Up to ``min(max_bytes, SCRATCH_BYTES)`` bytes from a plain ``sock``, up to ``max_bytes``
    from any other (b"" at end of stream). Raises what ``recv`` raises (BlockingIOError on a
    non-blocking socket with nothing)."""
    if not isinstance(sock, socket.socket):
        data: bytes = sock.recv(max_bytes)
        return data
    view = _scratch()
    n = sock.recv_into(view, min(max_bytes, SCRATCH_BYTES))
    return bytes(view[:n])
