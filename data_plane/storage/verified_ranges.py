"""VerifiedRanges: which byte ranges of a segment's .log have passed their CRC-32C check in
this process, so the read path checks each batch once and then serves it zero-copy.

Data appended by this process was checked in memory before it was written; data recovered on
open was checked by recovery; everything else (segments below the recovery point, loaded
without a scan) is checked the first time a read touches it. Ranges are half-open
``[start, end)`` byte positions on batch boundaries, kept sorted, disjoint and merged.

Not thread-safe by itself: the owning segment calls it under the log's lock or from the log's
owner thread.
"""

from __future__ import annotations

import bisect


class VerifiedRanges:
    __slots__ = ("_ends", "_starts")

    def __init__(self) -> None:
        self._starts: list[int] = []
        self._ends: list[int] = []

    def add(self, start: int, end: int) -> None:
        if end <= start:
            return
        if self._ends and self._ends[-1] == start:
            self._ends[-1] = end  # the common case: an append right after verified data
            return
        i = bisect.bisect_left(self._ends, start)
        j = bisect.bisect_right(self._starts, end)
        if i < j:
            start = min(start, self._starts[i])
            end = max(end, self._ends[j - 1])
        self._starts[i:j] = [start]
        self._ends[i:j] = [end]

    def gaps(self, start: int, end: int) -> list[tuple[int, int]]:
        """The sub-ranges of ``[start, end)`` not yet verified."""
        out: list[tuple[int, int]] = []
        i = bisect.bisect_right(self._ends, start)
        pos = start
        while pos < end:
            if i >= len(self._starts) or self._starts[i] >= end:
                out.append((pos, end))
                break
            if self._starts[i] > pos:
                out.append((pos, self._starts[i]))
            pos = max(pos, self._ends[i])
            i += 1
        return out

    def covers(self, start: int, end: int) -> bool:
        i = bisect.bisect_right(self._ends, start)
        return i < len(self._starts) and self._starts[i] <= start and self._ends[i] >= end

    def clip(self, size: int) -> None:
        """Forget everything at or beyond ``size`` (after a truncation)."""
        i = bisect.bisect_left(self._starts, size)
        del self._starts[i:]
        del self._ends[i:]
        if self._ends and self._ends[-1] > size:
            self._ends[-1] = size

    def clear(self) -> None:
        self._starts.clear()
        self._ends.clear()

    def __repr__(self) -> str:
        return f"VerifiedRanges({list(zip(self._starts, self._ends, strict=True))})"
