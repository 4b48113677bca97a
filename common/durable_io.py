"""Durable file writes: a file replaced so that a crash leaves the old or the new content,
never a torn one, and a directory's entries made durable.

The replacement protocol (Kafka's checkpoint files, meta.properties, the Raft journal's term
file): write ``<path>.tmp``, fsync it, rename it over ``<path>``, fsync the directory. The
``.tmp`` file a crash may leave behind is overwritten by the next write. Not thread-safe for
one path: callers that write the same file from several threads hold their own lock.
"""

from __future__ import annotations

import os

TMP_SUFFIX = ".tmp"


def fsync_directory(path: str) -> None:
    """fsync the directory ``path`` so that creations, renames and unlinks in it survive a
    crash."""
    fd = os.open(path or ".", os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_file(path: str) -> bool:
    """fsync the file ``path``; False (nothing done) when it does not exist."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    return True


def write_all(fd: int, data: bytes) -> None:
    """Write all of ``data`` to ``fd`` (``os.write`` may write less than asked)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def write_file_durably(path: str, data: bytes, mode: int = 0o644) -> None:
    """Replace ``path`` with ``data`` atomically and durably (tmp, fsync, rename, fsync dir);
    a new file gets permission bits ``mode``."""
    tmp = path + TMP_SUFFIX
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        write_all(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    fsync_directory(os.path.dirname(os.path.abspath(path)))
