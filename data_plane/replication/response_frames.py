"""ResponseFrames: an asyncio buffered protocol that receives Kafka response frames straight
into one buffer per frame.

Wire: each frame is a 4-byte big-endian size, then that many bytes. Between frames the
transport's ``recv_into`` fills a SCRATCH_BYTES buffer: frames complete in it are copied out
(small answers: one read, one small copy). A frame that is not complete gets a ``bytearray``
of exactly its size, takes what already arrived, and the transport then reads the rest
straight into it, so a fetch answer of many megabytes is copied once, by the kernel (a
stream reader would copy it into its own buffer, out of it, into a frame buffer and out
again). Each body is handed out as its own ``bytearray`` (writable, never resized, never
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

from common.protocol.errors import ProtocolError
from common.protocol.framing import check_frame_size

_SIZE = struct.Struct(">i")
# What one read between frames may take: a few small answers, or the start of a large one.
SCRATCH_BYTES = 64 * 1024


class ResponseFrames(asyncio.BufferedProtocol):
    def __init__(self, max_frame_bytes: int, peer: str) -> None:
        self._max_frame_bytes = max_frame_bytes
        self._peer = peer
        self._scratch = memoryview(bytearray(SCRATCH_BYTES))
        # Bytes in the scratch buffer not yet taken as frames (less than one size prefix
        # between reads).
        self._scratch_filled = 0
        # A view of the frame body being read straight into (a bytearray of the frame's
        # size), and how much of it has arrived.
        self._body_view: memoryview | None = None
        self._body_filled = 0
        self._ready: collections.deque[bytearray] = collections.deque()
        self._waiter: asyncio.Future[bytearray] | None = None
        self._error: BaseException | None = None
        self.transport: asyncio.Transport | None = None

    # -- asyncio.BufferedProtocol ------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports implement asyncio.Transport without subclassing it.
        self.transport = cast(asyncio.Transport, transport)

    def get_buffer(self, sizehint: int) -> memoryview:
        if self._body_view is not None:
            return self._body_view[self._body_filled :]
        return self._scratch[self._scratch_filled :]

    def buffer_updated(self, nbytes: int) -> None:
        if self._error is not None:  # failed: what still arrives before the close is dropped
            return
        view = self._body_view
        if view is not None:
            self._body_filled += nbytes
            if self._body_filled == len(view):
                self._body_view = None
                # view.obj is typed as any buffer; it is the bytearray this protocol made in
                # _take_frames, and a cast() here would be a call per fetch response.
                self._deliver(view.obj)  # type: ignore[arg-type]
            return
        self._scratch_filled += nbytes
        self._take_frames()

    def _take_frames(self) -> None:
        scratch, end = self._scratch, self._scratch_filled
        pos = 0
        while end - pos >= _SIZE.size:
            (size,) = _SIZE.unpack_from(scratch, pos)
            try:
                check_frame_size(size, self._max_frame_bytes)
            except ProtocolError as e:
                self._fail(e)
                return
            start = pos + _SIZE.size
            if end - start >= size:
                self._deliver(bytearray(scratch[start : start + size]))
                pos = start + size
                continue
            # Incomplete: the rest is read straight into the frame's own buffer.
            body = bytearray(size)
            have = end - start
            body[:have] = scratch[start:end]
            self._body_view, self._body_filled = memoryview(body), have
            pos = end
            break
        left = end - pos
        if left:
            scratch[:left] = scratch[pos:end]
        self._scratch_filled = left

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

    async def next_frame(self, timeout_s: float | None = None) -> bytearray:
        """The next frame body, waiting for it at most ``timeout_s`` (then TimeoutError;
        None: no limit); raises the stream's error once it failed. The timeout is a timer
        on the waiting future, not ``asyncio.wait_for``, which would wrap every call in a
        task of its own: one frame per fetch round trip makes that a cost of the replication
        path."""
        if self._ready:
            return self._ready.popleft()
        if self._error is not None:
            raise self._error
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[bytearray] = loop.create_future()
        self._waiter = waiter
        timer = None if timeout_s is None else loop.call_later(timeout_s, _time_out, waiter)
        try:
            return await waiter
        finally:
            self._waiter = None
            if timer is not None:
                timer.cancel()

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
        self._body_view = None
        self._scratch_filled = 0
        if self.transport is not None:
            self.transport.close()
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done() and self._error is not None:
            waiter.set_exception(self._error)


def _time_out(waiter: asyncio.Future[bytearray]) -> None:
    if not waiter.done():
        waiter.set_exception(TimeoutError("no response frame in time"))
