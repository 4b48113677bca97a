"""Sans-IO framing of the Kafka byte stream: ``size int32 | size bytes``, repeated.

:class:`FrameReader` is fed whatever chunks a socket returns and hands back complete frames
(without the size prefix). Both sides use it: the broker with ``max_frame_bytes`` =
``socket.request.max.bytes`` (:data:`common.protocol.codec.MAX_REQUEST_BYTES` by default),
the client with its own bound on response size.

Invariants: a size prefix above ``max_frame_bytes`` raises :class:`FrameTooLargeError` as soon
as its 4 bytes have arrived, before any of the body is buffered, so a peer cannot make us
allocate more than ``max_frame_bytes`` plus one chunk; a negative size raises
:class:`ProtocolError`. After either error the stream is unusable (the reader refuses more
input); close the connection. Not thread-safe: one reader per connection, used by one thread.
"""

from __future__ import annotations

import struct

from common.protocol.codec import MAX_REQUEST_BYTES
from common.protocol.errors import FrameTooLargeError, ProtocolError

_SIZE = struct.Struct(">i")
_unpack_size = _SIZE.unpack_from


class FrameReader:
    """Reassembles frames from a byte stream (see the module docstring)."""

    __slots__ = ("_broken", "_buffer", "_max_frame_bytes")

    def __init__(self, max_frame_bytes: int = MAX_REQUEST_BYTES) -> None:
        if max_frame_bytes < 0:
            raise ValueError(f"max_frame_bytes must be >= 0, got {max_frame_bytes}")
        self._max_frame_bytes = max_frame_bytes
        self._buffer = bytearray()
        self._broken = False

    @property
    def max_frame_bytes(self) -> int:
        return self._max_frame_bytes

    @property
    def buffered_bytes(self) -> int:
        """Bytes received but not yet returned as part of a frame."""
        return len(self._buffer)

    def bytes_needed(self) -> int:
        """How many more bytes complete the next frame (or its size prefix); a hint for
        how much to read."""
        if len(self._buffer) < 4:
            return 4 - len(self._buffer)
        (size,) = _unpack_size(self._buffer, 0)
        return max(0, 4 + size - len(self._buffer))

    def feed(self, data: bytes | bytearray | memoryview) -> list[bytes | memoryview]:
        """Add ``data`` and return every frame it completes, in order (possibly none).

        Frames that lie entirely inside an immutable ``bytes`` chunk are returned as
        memoryview slices of it (no copy); frames assembled across chunks are ``bytes``.
        """
        if self._broken:
            raise ProtocolError("frame stream already failed; close the connection")
        frames: list[bytes | memoryview] = []
        if not self._buffer and isinstance(data, bytes):
            pos = self._take_frames(memoryview(data), frames)
            if pos < len(data):
                self._buffer += memoryview(data)[pos:]
                self._check_prefix()
            return frames
        self._buffer += data
        pos = self._take_frames(memoryview(self._buffer), frames, copy=True)
        if pos:
            del self._buffer[:pos]
        self._check_prefix()
        return frames

    def _take_frames(
        self, view: memoryview, frames: list[bytes | memoryview], copy: bool = False
    ) -> int:
        pos = 0
        end = len(view)
        try:
            while end - pos >= 4:
                (size,) = _unpack_size(view, pos)
                self._validate(size)
                if end - pos - 4 < size:
                    break
                if copy:
                    frames.append(bytes(view[pos + 4 : pos + 4 + size]))
                else:
                    frames.append(view[pos + 4 : pos + 4 + size])
                pos += 4 + size
        finally:
            if copy:
                # Release the export so the bytearray can be resized.
                view.release()
        return pos

    def _check_prefix(self) -> None:
        if len(self._buffer) >= 4:
            self._validate(_unpack_size(self._buffer, 0)[0])

    def _validate(self, size: int) -> None:
        try:
            check_frame_size(size, self._max_frame_bytes)
        except ProtocolError:
            self._broken = True
            raise


def check_frame_size(size: int, max_frame_bytes: int) -> None:
    """Raise for a size prefix no frame may have: :class:`ProtocolError` when negative,
    :class:`FrameTooLargeError` above ``max_frame_bytes``."""
    if size < 0:
        raise ProtocolError(f"negative frame size {size}")
    if size > max_frame_bytes:
        raise FrameTooLargeError(size, max_frame_bytes)
