"""ResponseFrames: an asyncio buffered protocol that receives Kafka response frames straight
into one buffer per frame.

Wire: each frame is a 4-byte big-endian size, then that many bytes. The transport's
``recv_into`` writes the size into a 4-byte buffer, then the body into a ``bytearray`` of
exactly the body's size, so a fetch answer of many megabytes is copied once, by the kernel:
a stream reader would copy it into its own buffer, out of it, into a frame buffer and out
again. The body is handed out as that ``bytearray`` (writable, never resized, never
reused).

Errors end the stream for good: a negative size or one over ``max_frame_bytes`` closes the
transport and fails the waiting and every later :meth:`next_frame` with
:class:`ProtocolError` / :class:`FrameTooLargeError`; the peer closing fails them with
EOFError.

Thread-safety: none; the event loop's thread only.
"""

from __future__ import annotations

import asyncio
import collections
import struct
from typing import cast

from data_plane.protocol.errors import FrameTooLargeError, ProtocolError

_SIZE = struct.Struct(">i")


class ResponseFrames(asyncio.BufferedProtocol):
    def __init__(self, max_frame_bytes: int, peer: str) -> None:
        self._max_frame_bytes = max_frame_bytes
        self._peer = peer
        self._size = bytearray(_SIZE.size)
        self._size_view = memoryview(self._size)
        # The frame body being received (None while its size is), and how much of the size
        # or the body has arrived.
        self._body: bytearray | None = None
        self._body_view: memoryview | None = None
        self._filled = 0
        self._ready: collections.deque[bytearray] = collections.deque()
        self._waiter: asyncio.Future[bytearray] | None = None
        self._error: BaseException | None = None
        self.transport: asyncio.Transport | None = None

    # -- asyncio.BufferedProtocol ------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports implement asyncio.Transport without subclassing it.
        self.transport = cast(asyncio.Transport, transport)

    def get_buffer(self, sizehint: int) -> memoryview:
        view = self._size_view if self._body_view is None else self._body_view
        return view[self._filled :]

    def buffer_updated(self, nbytes: int) -> None:
        if self._error is not None:  # failed: what still arrives before the close is dropped
            self._filled = 0
            return
        self._filled += nbytes
        if self._body is None:
            if self._filled < _SIZE.size:
                return
            (size,) = _SIZE.unpack(self._size)
            if size < 0:
                self._fail(ProtocolError(f"negative frame size {size} from {self._peer}"))
                return
            if size > self._max_frame_bytes:
                self._fail(FrameTooLargeError(size, self._max_frame_bytes))
                return
            self._body = bytearray(size)
            self._body_view = memoryview(self._body)
            self._filled = 0
        if self._filled == len(self._body):
            body = self._body
            self._body = self._body_view = None
            self._filled = 0
            self._deliver(body)

    def eof_received(self) -> bool:
        return False  # close the transport; connection_lost reports it

    def connection_lost(self, exc: Exception | None) -> None:
        if self._error is None:
            error = EOFError(f"connection closed by {self._peer}")
            if exc is not None:
                error.__cause__ = exc
            self._error = error
        self._wake()

    # -- the caller's side -------------------------------------------------------------------

    async def next_frame(self) -> bytearray:
        """The next frame body, waiting for it; raises the stream's error once it failed."""
        if self._ready:
            return self._ready.popleft()
        if self._error is not None:
            raise self._error
        waiter = asyncio.get_running_loop().create_future()
        self._waiter = waiter
        try:
            return await waiter
        finally:
            self._waiter = None

    @property
    def pending(self) -> int:
        """Frames received and not yet taken by :meth:`next_frame`."""
        return len(self._ready)

    # -- internals ---------------------------------------------------------------------------

    def _deliver(self, body: bytearray) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(body)
        else:
            self._ready.append(body)

    def _fail(self, error: BaseException) -> None:
        self._error = error
        self._body = self._body_view = None
        self._filled = 0
        if self.transport is not None:
            self.transport.close()
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done() and self._error is not None:
            waiter.set_exception(self._error)
