"""Writing a file range back to disk early and dropping it from the page cache.

A log written at hundreds of MB/s fills the page cache with pages nobody reads again once
the followers and tail consumers have them. Allocating a page cache page is cheap on bare
metal, but on a virtual machine whose free memory goes back to the host (virtio-balloon
free page reporting, as on Firecracker) every newly allocated page is faulted in by the
host first: about 11 us per 4 KiB page measured on the 2-core benchmark VM, which makes
buffered writes 3-6x slower than writes into pages the guest already holds. Writing a range
back soon after it is written and then dropping it keeps the log's working set small, so
new writes reuse recently freed pages.

The work runs on one background thread per process (:func:`submit`), so an appending
thread never waits for the disk: dropping a range waits for its writeback. Linux only
(``sync_file_range``); elsewhere :data:`SUPPORTED` is False and nothing is done. None of it
is a durability point: ``sync_file_range`` writes no metadata and flushes no device cache
(flushing stays with ``FileRecords.flush``), and a write error it meets is logged here and
surfaces again at the next flush, where the log directory fails as for any flush error. A
segment closed while its job waited (retention, deletion) makes the job a no-op.

Thread-safety: :func:`submit` may be called from any thread; the worker holds a reference
to each file's descriptor holder until its job is done, so the descriptor stays open (a
descriptor closed outright meanwhile makes the job a no-op).
"""

from __future__ import annotations

import ctypes
import errno
import logging
import os
import queue
import sys
import threading
from collections.abc import Callable
from typing import Protocol

from data_plane.storage.errors import LogClosedError

logger = logging.getLogger(__name__)

# Jobs waiting for the worker; a job offered beyond this is skipped (its pages stay cached
# until the kernel reclaims them), so a slow disk never makes appends wait or memory grow.
MAX_PENDING_JOBS = 4096

# <linux/fs.h>
_WAIT_BEFORE = 1
_WRITE = 2
_WAIT_AFTER = 4


def _load() -> Callable[[int, int, int, int], int] | None:
    if not sys.platform.startswith("linux") or not hasattr(os, "posix_fadvise"):
        return None
    try:
        fn = ctypes.CDLL(None, use_errno=True).sync_file_range
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint]
    fn.restype = ctypes.c_int
    return fn


_sync_file_range = _load()
SUPPORTED = _sync_file_range is not None


def _call(fd: int, offset: int, length: int, flags: int) -> None:
    fn = _sync_file_range
    if fn is None:  # callers check SUPPORTED first
        raise OSError(errno.ENOSYS, "sync_file_range is not available")
    if fn(fd, offset, length, flags) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"sync_file_range: {os.strerror(err)}")


def start_writeback(fd: int, offset: int, length: int) -> None:
    """Start writing the dirty pages of ``[offset, offset + length)`` to disk and return
    without waiting for them (it may wait while the device's queue is full)."""
    if SUPPORTED and length > 0:
        _call(fd, offset, length, _WRITE)


def drop(fd: int, offset: int, length: int) -> None:
    """Wait until ``[offset, offset + length)`` is written back (writing what is still
    dirty), then drop its pages from the page cache; a later read of the range reads the
    disk. A write error of the range raises OSError."""
    if SUPPORTED and length > 0:
        _call(fd, offset, length, _WAIT_BEFORE | _WRITE | _WAIT_AFTER)
        os.posix_fadvise(fd, offset, length, os.POSIX_FADV_DONTNEED)


class _Descriptor(Protocol):
    def fileno(self) -> int: ...


_jobs: queue.Queue[tuple[_Descriptor, int, int, int]] = queue.Queue(MAX_PENDING_JOBS)
_worker_lock = threading.Lock()
_worker: threading.Thread | None = None


def submit(file: _Descriptor, drop_from: int, writeback_from: int, end: int) -> bool:
    """Queue: drop ``[drop_from, writeback_from)`` from the page cache (after its
    writeback), then start writeback of ``[writeback_from, end)``. False when the job was
    skipped (unsupported platform, or MAX_PENDING_JOBS waiting)."""
    if not SUPPORTED:
        return False
    _ensure_worker()
    try:
        _jobs.put_nowait((file, drop_from, writeback_from, end))
    except queue.Full:
        return False
    return True


def wait_idle() -> None:
    """Block until every queued job is done (tests, and shutdown paths that want it)."""
    _jobs.join()


def _ensure_worker() -> None:
    global _worker
    if _worker is not None and _worker.is_alive():
        return
    with _worker_lock:
        if _worker is None or not _worker.is_alive():
            _worker = threading.Thread(target=_run, name="page-cache-writeback", daemon=True)
            _worker.start()


def _run() -> None:
    while True:
        file, drop_from, writeback_from, end = _jobs.get()
        try:
            fd = file.fileno()
            drop(fd, drop_from, writeback_from - drop_from)
            start_writeback(fd, writeback_from, end - writeback_from)
        except (OSError, LogClosedError) as e:  # a write error, or the file went meanwhile
            logger.debug("page cache writeback of a segment skipped: %s", e)
        finally:
            _jobs.task_done()
