"""GroupCoordinatorRuntime against a scripted PartitionWriter (no broker): loading follows the
writer's leadership, commits are answered only when the writer reports them replicated, and an
append the writer refuses fails the commit at once."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field

from common.error_codes import ErrorCode
from common.topic_partition import TopicPartition
from data_plane.coordinator import OFFSETS_TOPIC, GroupCoordinator, GroupCoordinatorRuntime
from data_plane.coordinator.config import GroupCoordinatorConfig
from data_plane.coordinator.messages import OffsetCommitRequest
from data_plane.storage import Log, decode_records

TP0 = TopicPartition(OFFSETS_TOPIC, 0)


@dataclass
class ScriptedWriter:
    """A PartitionWriter whose leadership, append errors and replication are set by the test."""

    epochs: dict[TopicPartition, int] = field(default_factory=dict)
    append_error: int = ErrorCode.NO_ERROR
    appended: list[tuple[TopicPartition, bytearray, Callable[[int], None]]] = field(
        default_factory=list
    )

    def append(
        self,
        tp: TopicPartition,
        batch: bytearray,
        timeout_ms: int,
        on_replicated: Callable[[int], None],
    ) -> int:
        if self.append_error != ErrorCode.NO_ERROR:
            return self.append_error
        self.appended.append((tp, batch, on_replicated))
        return ErrorCode.NO_ERROR

    def leader_epoch(self, tp: TopicPartition) -> int | None:
        return self.epochs.get(tp)

    def local_log(self, tp: TopicPartition) -> Log | None:
        return None

    def partition_count(self, topic: str) -> int:
        return 1 if topic == OFFSETS_TOPIC else 0


def commit(group: str, offset: int) -> OffsetCommitRequest:
    return OffsetCommitRequest(group, -1, "", None, ((("t", 0), offset, -1, None),))


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


def make_runtime(writer: ScriptedWriter) -> GroupCoordinatorRuntime:
    coordinator = GroupCoordinator(GroupCoordinatorConfig(), lambda: 1_000)
    return GroupCoordinatorRuntime(
        coordinator, writer, commit_timeout_ms=5000, load_buffer_bytes=1 << 20
    )


def test_commit_is_answered_once_the_writer_reports_it_replicated() -> None:
    async def scenario() -> None:
        writer = ScriptedWriter(epochs={TP0: 3})
        runtime = make_runtime(writer)
        runtime.on_partition_change(TP0)
        await settle()  # the (empty) load completes
        pending = asyncio.ensure_future(runtime.commit_offsets(commit("g", 42)))
        await settle()
        assert not pending.done()
        ((tp, batch, on_replicated),) = writer.appended
        assert tp == TP0
        _header, records = decode_records(batch, 0)
        assert len(records) == 1 and records[0].key is not None
        on_replicated(ErrorCode.NO_ERROR)
        result = await asyncio.wait_for(pending, 5)
        assert result.errors == {("t", 0): ErrorCode.NO_ERROR}
        runtime.close()

    asyncio.run(scenario())


def test_an_append_the_writer_refuses_fails_the_commit() -> None:
    async def scenario() -> None:
        writer = ScriptedWriter(epochs={TP0: 1}, append_error=ErrorCode.NOT_LEADER_OR_FOLLOWER)
        runtime = make_runtime(writer)
        runtime.on_partition_change(TP0)
        await settle()
        result = await asyncio.wait_for(runtime.commit_offsets(commit("g", 1)), 5)
        assert result.errors[("t", 0)] != ErrorCode.NO_ERROR
        assert writer.appended == []
        runtime.close()

    asyncio.run(scenario())


def test_groups_are_served_only_while_the_writer_says_this_broker_leads() -> None:
    async def scenario() -> None:
        writer = ScriptedWriter()
        runtime = make_runtime(writer)
        runtime.on_partition_change(TP0)  # not the leader: nothing loaded
        result = await asyncio.wait_for(runtime.commit_offsets(commit("g", 1)), 5)
        assert result.errors[("t", 0)] == ErrorCode.NOT_COORDINATOR
        writer.epochs[TP0] = 7
        runtime.on_partition_change(TP0)
        await settle()
        pending = asyncio.ensure_future(runtime.commit_offsets(commit("g", 2)))
        await settle()
        assert len(writer.appended) == 1
        del writer.epochs[TP0]
        runtime.on_partition_change(TP0)  # leadership lost: unloaded
        writer.appended[0][2](ErrorCode.NO_ERROR)
        result = await asyncio.wait_for(pending, 5)
        assert result.errors[("t", 0)] != ErrorCode.NO_ERROR
        runtime.close()

    asyncio.run(scenario())
