"""A shard context for driving one part of the group coordinator alone (no GroupCoordinator):
one ``__consumer_offsets`` partition, owned and loaded, a fake clock, predictable member ids,
and the writes the part asked for, completed on demand."""

from __future__ import annotations

import itertools
from typing import Any

from common.error_codes import ErrorCode
from data_plane.coordinator.config import GroupCoordinatorConfig
from data_plane.coordinator.messages import CoordinatorOutputs, RecordWrite
from data_plane.coordinator.partition_ownership import PartitionOwnership
from data_plane.coordinator.shard_context import ShardContext
from tests.unit.coordinator.harness import FakeClock


class Parts:
    def __init__(self, **config: Any) -> None:
        defaults: dict[str, Any] = {
            "group_initial_rebalance_delay_ms": 0,
            "group_min_session_timeout_ms": 1000,
        }
        defaults.update(config)
        self.clock = FakeClock()
        ids = itertools.count(1)
        ownership = PartitionOwnership(1)
        ownership.begin(0)
        ownership.mark_loaded(0)
        self.ctx = ShardContext(
            GroupCoordinatorConfig(**defaults),
            self.clock,
            ownership,
            new_member_id=lambda prefix: f"{prefix or 'member'}-{next(ids)}",
        )
        self.results: dict[Any, Any] = {}
        self.writes: list[RecordWrite] = []
        self._tokens = itertools.count(1)

    def token(self) -> int:
        return next(self._tokens)

    def absorb(self, out: CoordinatorOutputs) -> None:
        for waiter, result in out.responses:
            if waiter in self.results:
                raise AssertionError(f"waiter {waiter} answered twice")
            self.results[waiter] = result
        self.writes.extend(out.writes)

    def complete_writes(self, error: int = ErrorCode.NO_ERROR) -> list[RecordWrite]:
        """Complete every write asked for so far (and those their callbacks ask for)."""
        done: list[RecordWrite] = []
        while self.writes:
            w = self.writes.pop(0)
            done.append(w)
            self.absorb(self.ctx.writes.complete(w.write_id, error, self.ctx.ownership.is_loaded))
        return done
