"""Receiving large response frames straight into their final buffer (sans-IO).

A Fetch response is megabytes; fed through :class:`~common.protocol.framing.FrameReader`
in socket-sized chunks it is copied three times (``recv`` into a fresh chunk, the chunk into
the reader's buffer, the finished frame out of it) and every copy lands in freshly mapped
memory. That was a fifth of a consumer's CPU per record. A connection instead notices, in a
chunk that starts at a frame boundary, the start of a frame too large for the chunk
(:func:`find_large_frame`), gives the complete frames before it to its FrameReader, and
receives the rest of the large frame with ``recv_into`` into one buffer of the frame's size
(:class:`LargeFrame`): one copy, from the kernel.

Frame layout (Kafka): ``size int32 (big-endian) | size bytes``. Sizes are validated here as
the FrameReader would: a negative size or one above ``max_frame_bytes`` is never taken as a
large frame, so the FrameReader sees it and raises. Not thread-safe (one per connection).
"""

from __future__ import annotations

import struct

_unpack_size = struct.Struct(">i").unpack_from

# Frames whose body is at least this big go straight into their own buffer; smaller ones
# (produce acks, metadata, small fetches) keep the FrameReader path.
LARGE_FRAME_BYTES = 256 * 1024


def find_large_frame(
    chunk: bytes | memoryview, max_frame_bytes: int, large_frame_bytes: int = LARGE_FRAME_BYTES
) -> tuple[int, int]:
    """(position, body size) of a frame of at least ``large_frame_bytes`` (and at most
    ``max_frame_bytes``) that starts in ``chunk``, which starts at a frame boundary, after
    only complete frames, and does not end in it; (-1, 0) if there is none."""
    pos = 0
    end = len(chunk)
    while end - pos >= 4:
        (size,) = _unpack_size(chunk, pos)
        if size < 0 or size > max_frame_bytes:
            return -1, 0  # the FrameReader reports it
        if end - pos - 4 >= size:
            pos += 4 + size  # complete in this chunk
            continue
        if size >= large_frame_bytes:
            return pos, size
        return -1, 0
    return -1, 0


class LargeFrame:
    """One frame's body being received: a buffer of its exact size and how much is filled.

    Invariant: ``0 <= filled <= len(buffer)``; the frame is complete when they are equal.
    """

    __slots__ = ("buffer", "filled")

    def __init__(self, size: int, first_bytes: bytes | memoryview) -> None:
        if len(first_bytes) >= size:
            raise ValueError(f"{len(first_bytes)} bytes already make the {size}-byte frame")
        self.buffer = bytearray(size)
        self.filled = len(first_bytes)
        self.buffer[: self.filled] = first_bytes

    def unfilled(self) -> memoryview:
        """Where the next ``recv_into`` writes."""
        return memoryview(self.buffer)[self.filled :]

    def advance(self, received: int) -> bool:
        """Record ``received`` more bytes; True when the frame is complete."""
        if received < 0 or self.filled + received > len(self.buffer):
            raise ValueError(f"{received} bytes do not fit the frame")
        self.filled += received
        return self.filled == len(self.buffer)

    def frame(self) -> memoryview:
        return memoryview(self.buffer)
