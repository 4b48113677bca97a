"""A scripted driver for GroupCoordinator: a fake clock, waiter tokens, and writes completed
(or failed) on demand, so tests read like the request sequences clients send."""

from __future__ import annotations

import itertools
import struct
from collections.abc import Hashable
from typing import Any

from common.error_codes import ErrorCode
from data_plane.coordinator.config import GroupCoordinatorConfig
from data_plane.coordinator.coordinator import GroupCoordinator
from data_plane.coordinator.messages import (
    CoordinatorOutputs,
    JoinGroupRequest,
    JoinGroupResult,
    OffsetCommitRequest,
    RecordWrite,
    SyncGroupRequest,
    SyncGroupResult,
)

RANGE = (("range", b"sub-range"),)


def subscription(topics: list[str], version: int = 0, tail: bytes = b"") -> bytes:
    """ConsumerProtocolSubscription bytes, laid out as Kafka clients send them."""
    out = struct.pack(">hi", version, len(topics))
    for t in topics:
        out += struct.pack(">h", len(t)) + t.encode()
    return out + struct.pack(">i", -1) + tail  # null user_data, then later versions' fields


class FakeClock:
    def __init__(self, start_ms: int = 1_000_000) -> None:
        self.now_ms = start_ms

    def __call__(self) -> int:
        return self.now_ms


class Harness:
    """One coordinator owning every group (one __consumer_offsets partition, loaded)."""

    def __init__(self, **config: Any) -> None:
        defaults: dict[str, Any] = {
            "group_initial_rebalance_delay_ms": 0,
            "group_min_session_timeout_ms": 1000,
        }
        defaults.update(config)
        self.clock = FakeClock()
        ids = itertools.count(1)
        self.c = GroupCoordinator(
            GroupCoordinatorConfig(**defaults),
            self.clock,
            num_partitions=1,
            new_member_id=lambda prefix: f"{prefix or 'member'}-{next(ids)}",
        )
        self.c.begin_loading(0)
        self.c.complete_loading(0)
        self._tokens = itertools.count(1)
        self.results: dict[Hashable, Any] = {}
        self.pending_writes: list[RecordWrite] = []
        self.written: list[RecordWrite] = []
        self.auto_complete_writes = True

    def token(self) -> int:
        return next(self._tokens)

    def absorb(self, out: CoordinatorOutputs) -> None:
        for waiter, result in out.responses:
            if waiter in self.results:
                raise AssertionError(f"waiter {waiter} answered twice")
            self.results[waiter] = result
        self.pending_writes.extend(out.writes)
        if self.auto_complete_writes:
            self.complete_writes()

    def complete_writes(self, error: int = ErrorCode.NO_ERROR) -> None:
        while self.pending_writes:
            w = self.pending_writes.pop(0)
            if error == ErrorCode.NO_ERROR:
                self.written.append(w)
            self.absorb(self.c.complete_write(w.write_id, error))

    def advance(self, ms: int) -> None:
        self.clock.now_ms += ms
        self.absorb(self.c.tick())

    # --- requests -----------------------------------------------------------------------------

    def join(
        self,
        member_id: str = "",
        *,
        group: str = "g",
        protocols: tuple[tuple[str, bytes], ...] = RANGE,
        protocol_type: str = "consumer",
        instance_id: str | None = None,
        session_timeout_ms: int = 10_000,
        rebalance_timeout_ms: int = 5_000,
        require_known_member_id: bool = False,
        client_id: str = "client",
    ) -> int:
        token = self.token()
        req = JoinGroupRequest(
            group,
            member_id,
            instance_id,
            session_timeout_ms,
            rebalance_timeout_ms,
            protocol_type,
            protocols,
            client_id,
            "/127.0.0.1",
            require_known_member_id,
        )
        self.absorb(self.c.join_group(token, req))
        return token

    def sync(
        self,
        member_id: str,
        generation: int,
        assignments: dict[str, bytes] | None = None,
        *,
        group: str = "g",
        instance_id: str | None = None,
    ) -> int:
        token = self.token()
        req = SyncGroupRequest(
            group, generation, member_id, instance_id, tuple((assignments or {}).items())
        )
        self.absorb(self.c.sync_group(token, req))
        return token

    def commit(
        self,
        offsets: dict[tuple[str, int], int],
        *,
        group: str = "g",
        generation: int = -1,
        member_id: str = "",
        metadata: str = "",
        instance_id: str | None = None,
    ) -> int:
        token = self.token()
        req = OffsetCommitRequest(
            group,
            generation,
            member_id,
            instance_id,
            tuple((tp, off, -1, metadata) for tp, off in offsets.items()),
        )
        self.absorb(self.c.commit_offsets(token, req))
        return token

    def join_result(self, token: int) -> JoinGroupResult:
        r = self.results[token]
        assert isinstance(r, JoinGroupResult)
        return r

    def sync_result(self, token: int) -> SyncGroupResult:
        r = self.results[token]
        assert isinstance(r, SyncGroupResult)
        return r

    # --- composite steps ----------------------------------------------------------------------

    def stable_group(self, n: int, group: str = "g") -> tuple[list[str], int]:
        """n members joined and synced (leader = the first); returns (member ids, generation)."""
        tokens = [self.join(group=group, client_id=f"c{i}") for i in range(n)]
        for _ in range(3):  # the initial delay (0 ms) passes, extended once per new member
            self.advance(0)
        results = [self.join_result(t) for t in tokens]
        ids = [r.member_id for r in results]
        generation = results[0].generation_id
        leader = results[0].leader_id
        syncs = [
            self.sync(
                mid,
                generation,
                {m: f"assign-{m}".encode() for m in ids} if mid == leader else None,
                group=group,
            )
            for mid in ids
        ]
        for t in syncs:
            assert self.sync_result(t).error_code == ErrorCode.NO_ERROR
        return ids, generation
