"""The value types a ``records`` field holds, shared by the codec and the generated messages.

A decoded ``records`` field is a memoryview of the frame (zero copy). A value to encode is
bytes-like, or a :class:`FileSliceLike` byte range of an open file, which the codec passes
through as its own part of the frame for ``os.sendfile`` instead of reading it.
"""

from __future__ import annotations

from typing import Protocol, TypeAlias


class FileSliceLike(Protocol):
    """A byte range of an open file (data_plane.storage's FileSlice is one)."""

    fileno: int
    position: int
    length: int


Records: TypeAlias = bytes | bytearray | memoryview | FileSliceLike
