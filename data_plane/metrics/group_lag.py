"""Consumer group lag on the broker that coordinates the group: for every group loaded in this
broker's coordinator and every partition it has a committed offset for that this broker hosts,
lag = high watermark - committed offset (``kraftlog_consumer_group_lag{group,topic,partition}``;
partitions hosted elsewhere are reported by no one here, as the high watermark is local
state).

:meth:`GroupLagMetrics.update` runs on the broker's event loop every
:data:`LAG_INTERVAL_MS` and stores an immutable snapshot; the scrape only reads that snapshot.

Thread-safety: ``update`` on the loop thread; the gauge function reads one reference.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

from common.topic_partition import TopicPartition
from data_plane.metrics.registry import Gauge

LAG_INTERVAL_MS = 5000
# Bound on exported (group, topic, partition) series.
MAX_LAG_SERIES = 5000

Series = tuple[tuple[str, str, str], float]


class CommittedOffset(Protocol):
    """A group's committed offset of one partition, as the lag reads it."""

    @property
    def offset(self) -> int: ...


class GroupOffsets(Protocol):
    """What the lag reads of a group's OffsetFetch result (the group coordinator's
    ``OffsetFetchResult``, which this package sits below): ``offsets`` maps (topic, partition)
    to the committed offset, or None when the group has none."""

    @property
    def error_code(self) -> int: ...

    @property
    def offsets(self) -> Mapping[tuple[str, int], CommittedOffset | None]: ...


class GroupLagMetrics:
    def __init__(self, gauge: Gauge) -> None:
        self._snapshot: tuple[Series, ...] = ()
        self._last_ms: int | None = None
        gauge.set_function(lambda: self._snapshot)

    def maybe_update(
        self,
        now_ms: int,
        list_groups: Callable[[], tuple[int, Sequence[tuple[str, ...]]]],
        fetch_offsets: Callable[[str, None], GroupOffsets],
        high_watermarks: Callable[[], Mapping[TopicPartition, int]],
    ) -> None:
        """Recompute the snapshot if :data:`LAG_INTERVAL_MS` passed since the last one."""
        if self._last_ms is not None and now_ms - self._last_ms < LAG_INTERVAL_MS:
            return
        self._last_ms = now_ms
        _error, groups = list_groups()
        hws = {(tp[0], tp[1]): hw for tp, hw in high_watermarks().items()}
        out: list[Series] = []
        for group_id, *_ in groups:
            result = fetch_offsets(group_id, None)
            if getattr(result, "error_code", 0) != 0:
                continue
            for (topic, partition), committed in sorted((result.offsets or {}).items()):
                hw = hws.get((topic, partition))
                if hw is None or committed is None:
                    continue
                out.append(
                    ((group_id, topic, str(partition)), float(max(0, hw - committed.offset)))
                )
                if len(out) >= MAX_LAG_SERIES:
                    self._snapshot = tuple(out)
                    return
        self._snapshot = tuple(out)
