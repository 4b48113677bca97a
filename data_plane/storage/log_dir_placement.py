"""Which log directory a new partition log goes to: the online directory with the most usable
free space. Directories whose free space is within :data:`FREE_SPACE_TIE_SHARE` of the most
count as equal, and of those the one holding the fewest logs wins (then the first in
``log.dirs``), so directories on one filesystem, or on equal disks, fill evenly instead of
all new logs going to whichever has a few bytes more.

Pure functions (the free-space probe is passed in); thread-safe.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence

# Directories with at least this share of the largest free space count as equally free.
FREE_SPACE_TIE_SHARE = 0.9


def disk_space(path: str) -> tuple[int, int]:
    """(size, usable bytes) of ``path``'s filesystem, usable meaning what an unprivileged
    writer may still use; (-1, 0) when it cannot be read."""
    try:
        st = os.statvfs(path)
    except OSError:
        return -1, 0
    return st.f_blocks * st.f_frsize, st.f_bavail * st.f_frsize


def usable_bytes(path: str) -> int:
    """Usable bytes of ``path``'s filesystem (see :func:`disk_space`); 0 when unknown."""
    return disk_space(path)[1]


def choose_log_dir(
    dirs: Sequence[str],
    logs_per_dir: Mapping[str, int],
    free_bytes: Callable[[str], int] = usable_bytes,
) -> str:
    """The directory of ``dirs`` (online ones, in ``log.dirs`` order; not empty) for a new
    log."""
    free = {d: free_bytes(d) for d in dirs}
    most = max(free.values())
    equal = [d for d in dirs if free[d] >= most * FREE_SPACE_TIE_SHARE]
    return min(equal, key=lambda d: (logs_per_dir.get(d, 0), dirs.index(d)))
