"""The groups a group coordinator serves, by group id, and their timers.

One :class:`GroupMetadata` per group id, whatever its kind (classic, or KIP-848 consumer in
``GroupMetadata.consumer``): every part of the coordinator finds a group here. A group id
names at most one group.

Timers: each group has at most one scheduled deadline (its earliest,
``GroupMetadata.next_deadline_ms``); :meth:`GroupStore.pop_due` returns the ids of groups
whose deadline passed, and the caller checks them and schedules their next one. A heap entry
whose deadline is no longer the group's scheduled one is stale and skipped when popped.

Thread-safety: none; the coordinator's owner (the broker event loop) serialises access.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterator

from data_plane.coordinator.group import GroupMetadata, GroupState


class GroupStore:
    def __init__(self) -> None:
        self._groups: dict[str, GroupMetadata] = {}
        # (deadline ms, sequence, group id); stale entries are harmless (re-checked on pop).
        self._timers: list[tuple[int, int, str]] = []
        self._timer_seq = itertools.count()
        self._scheduled: dict[str, int] = {}

    # --- groups -------------------------------------------------------------------------------

    def get(self, group_id: str) -> GroupMetadata | None:
        return self._groups.get(group_id)

    def __getitem__(self, group_id: str) -> GroupMetadata:
        return self._groups[group_id]

    def create(self, group_id: str, partition: int, now_ms: int = -1) -> GroupMetadata:
        """A new Empty group (``now_ms``: when it entered that state)."""
        if group_id in self._groups:
            raise ValueError(f"group {group_id} exists")
        group = GroupMetadata(group_id, partition, state_timestamp_ms=now_ms)
        self._groups[group_id] = group
        return group

    def add(self, group: GroupMetadata) -> None:
        """A group built elsewhere (loaded from its records); replaces one of the same id."""
        self._groups[group.group_id] = group

    def pop(self, group_id: str) -> GroupMetadata | None:
        """Forget a group; its timer entry stays (stale once the id is reused)."""
        return self._groups.pop(group_id, None)

    def remove(self, group_id: str) -> GroupMetadata | None:
        """Forget a group and its timer."""
        self._scheduled.pop(group_id, None)
        return self._groups.pop(group_id, None)

    def __iter__(self) -> Iterator[GroupMetadata]:
        return iter(self._groups.values())

    def snapshot(self) -> list[GroupMetadata]:
        """The groups now, safe to iterate while removing some."""
        return list(self._groups.values())

    def in_partition(self, partition: int) -> list[GroupMetadata]:
        return [g for g in self._groups.values() if g.partition == partition]

    def drop_if_unused(self, group: GroupMetadata) -> bool:
        """A group a failed first join (or a consumer group's last leave) left holding
        nothing is not kept; True when it was dropped."""
        if (
            group.is_(GroupState.EMPTY)
            and not group.has_members()
            and not group.pending_members
            and not group.offsets
            and not group.pending_txn_offsets
            and group.generation_id == 0
            and group.pending_offset_commits == 0
        ):
            self._groups.pop(group.group_id, None)
            return True
        return False

    # --- timers -------------------------------------------------------------------------------

    def schedule(self, group: GroupMetadata, deadline_ms: int) -> None:
        """Check ``group`` at ``deadline_ms`` unless it is scheduled earlier already."""
        current = self._scheduled.get(group.group_id)
        if current is not None and current <= deadline_ms:
            return
        self._scheduled[group.group_id] = deadline_ms
        heapq.heappush(self._timers, (deadline_ms, next(self._timer_seq), group.group_id))

    def schedule_next(self, group: GroupMetadata) -> None:
        """Schedule the group's earliest deadline, if it has one."""
        deadline = group.next_deadline_ms()
        if deadline is not None:
            self.schedule(group, deadline)

    def next_deadline_ms(self) -> int | None:
        """The earliest scheduled deadline (clock ms), stale ones included."""
        return self._timers[0][0] if self._timers else None

    def pop_due(self, now_ms: int) -> list[str]:
        """Ids of the groups whose scheduled deadline is at or before ``now_ms``, unscheduled."""
        due: list[str] = []
        while self._timers and self._timers[0][0] <= now_ms:
            deadline, _, gid = heapq.heappop(self._timers)
            if self._scheduled.get(gid) == deadline:
                del self._scheduled[gid]
                due.append(gid)
        return due
