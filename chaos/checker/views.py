"""Turn a history (chaos.history) into the views the properties are checked on.

One pass over the paired operations builds: the sends (by value), every record read (from
polls and final reads), each consumer's stream of assignments and polls in completion order,
the final reads per partition, the fault windows and the leader observations. Reads of
topics that transactions write, transactions and group offsets go to the transactional
views (:mod:`chaos.checker.txn_views`) instead. Malformed
values raise :class:`HistoryFormatError` naming the operation, rather than being skipped:
a checker that silently ignores what it cannot parse would pass broken runs.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from chaos.checker.model import FaultWindow, FinalRead, Read, Send
from chaos.checker.txn_views import TxnViews, add_group_offsets, add_txn, transactional_topics
from chaos.history import (
    ASSIGN,
    FINAL_READ,
    GROUP_OFFSETS,
    HEAL_ALL,
    LEADER,
    NEMESIS,
    OK,
    POLL,
    READ_COMMITTED,
    SEND,
    TXN,
    HistoryFormatError,
    Op,
    Operation,
    pair_operations,
)
from common.topic_partition import TopicPartition


@dataclass(frozen=True, slots=True)
class Assignment:
    """A consumer's new assignment: partition -> next position (None = unknown)."""

    process: str
    positions: dict[TopicPartition, int | None]
    group: str | None
    time: float


@dataclass(frozen=True, slots=True)
class Poll:
    process: str
    reads: tuple[Read, ...]
    time: float


@dataclass(frozen=True, slots=True)
class LeaderObservation:
    topic: str
    partition: int
    epoch: int
    leader: int
    time: float
    source: str


@dataclass
class HistoryViews:
    sends: dict[str, Send] = field(default_factory=dict)
    duplicate_sends: list[Send] = field(default_factory=list)  # a value sent twice
    reads: list[Read] = field(default_factory=list)
    # Per consumer process: its assignments and polls in completion order.
    consumer_events: dict[str, list[Assignment | Poll]] = field(default_factory=dict)
    group_of: dict[str, str] = field(default_factory=dict)  # process -> consumer group
    finals: dict[TopicPartition, FinalRead] = field(default_factory=dict)
    fault_windows: list[FaultWindow] = field(default_factory=list)
    heals: list[tuple[float, bool]] = field(default_factory=list)  # (time, all faults healed)
    leaders: list[LeaderObservation] = field(default_factory=list)
    ops: dict[str, dict[str, int]] = field(default_factory=dict)
    end_time: float = 0.0
    txn: TxnViews = field(default_factory=TxnViews)
    # Per consumer process: its assignments and polls of transactional topics.
    txn_consumer_events: dict[str, list[Assignment | Poll]] = field(default_factory=dict)


def _field(op: Op, value: Any, key: str, kind: type | tuple[type, ...]) -> Any:
    if not isinstance(value, dict) or key not in value:
        raise HistoryFormatError(f"op {op.index} ({op.f}): value lacks {key!r}")
    item = value[key]
    if not isinstance(item, kind) or isinstance(item, bool):
        raise HistoryFormatError(f"op {op.index} ({op.f}): {key} is {item!r}")
    return item


def _committed(op: Op) -> bool:
    return isinstance(op.value, dict) and op.value.get("isolation") == READ_COMMITTED


def _records(
    op: Op, value: Any, process: str, final: bool, committed: bool = False
) -> tuple[Read, ...]:
    raw = _field(op, value, "records", list)
    reads: list[Read] = []
    for rec in raw:
        if (
            not isinstance(rec, list | tuple)
            or len(rec) != 4
            or not isinstance(rec[0], str)
            or not isinstance(rec[1], int)
            or not isinstance(rec[2], int)
            or not (rec[3] is None or isinstance(rec[3], str))
        ):
            raise HistoryFormatError(
                f"op {op.index} ({op.f}): record {rec!r} is not [topic, partition, offset, value]"
            )
        reads.append(Read(rec[0], rec[1], rec[2], rec[3], process, op.time, final, committed))
    return tuple(reads)


def build_views(ops: Iterable[Op]) -> HistoryViews:
    ops = list(ops)
    operations, events = pair_operations(ops)
    views = HistoryViews(end_time=ops[-1].time if ops else 0.0)
    views.txn.topics = transactional_topics(ops)
    for operation in operations:
        counts = views.ops.setdefault(operation.f, {"ok": 0, "fail": 0, "info": 0})
        counts[operation.type] += 1
        if operation.f == SEND:
            _add_send(views, operation)
        elif operation.f == TXN:
            add_txn(views.txn, operation)
        elif operation.f == GROUP_OFFSETS:
            add_group_offsets(views.txn, operation)
        elif operation.type != OK:
            continue
        elif operation.f == POLL:
            _add_poll(views, operation)
        elif operation.f == ASSIGN:
            _add_assign(views, operation)
        elif operation.f == FINAL_READ:
            _add_final(views, operation)
    for by_process in (views.consumer_events, views.txn_consumer_events):
        for events_list in by_process.values():
            events_list.sort(key=lambda e: e.time)
    _add_events(views, events)
    return views


def _add_send(views: HistoryViews, operation: Operation) -> None:
    inv = operation.invoke
    value = _field(inv, inv.value, "value", str)
    topic = _field(inv, inv.value, "topic", str)
    partition = _field(inv, inv.value, "partition", int)
    done = operation.completion
    offset = None
    error = None
    if done is not None and done.type == OK:
        offset = _field(done, done.value, "offset", int)
        if offset < 0:  # Kafka's "no offset" (-1): acknowledged, position unknown
            offset = None
    elif done is not None and isinstance(done.value, dict):
        error = str(done.value.get("error")) if done.value.get("error") is not None else None
    acks = str(inv.value.get("acks", "all"))
    # Unstated means idempotent: the stricter reading, so a duplicate is a violation.
    idempotent = inv.value.get("idempotent", True) is not False
    send = Send(
        value=value,
        topic=topic,
        partition=partition,
        process=inv.process,
        type=operation.type,
        acks=acks,
        invoke_time=inv.time,
        complete_time=done.time if done is not None else None,
        offset=offset,
        error=error,
        idempotent=idempotent,
    )
    if value in views.sends:
        views.duplicate_sends.append(send)
    else:
        views.sends[value] = send


def _add_poll(views: HistoryViews, operation: Operation) -> None:
    done = assert_done(operation.completion)
    reads = _records(
        done, done.value, operation.process, final=False, committed=_committed(operation.invoke)
    )
    queue = tuple(r for r in reads if r.topic not in views.txn.topics)
    txn = tuple(r for r in reads if r.topic in views.txn.topics)
    views.reads.extend(queue)
    views.txn.reads.extend(txn)
    _add_events_split(
        views,
        operation.process,
        Poll(operation.process, queue, done.time) if queue or not txn else None,
        Poll(operation.process, txn, done.time) if txn else None,
    )


def _add_assign(views: HistoryViews, operation: Operation) -> None:
    done = assert_done(operation.completion)
    parts = _field(done, done.value, "partitions", list)
    group = done.value.get("group")
    positions: dict[TopicPartition, int | None] = {}
    for part in parts:
        if (
            not isinstance(part, list | tuple)
            or len(part) != 3
            or not isinstance(part[0], str)
            or not isinstance(part[1], int)
            or not (part[2] is None or isinstance(part[2], int))
        ):
            raise HistoryFormatError(
                f"op {done.index} (assign): {part!r} is not [topic, partition, position]"
            )
        positions[(part[0], part[1])] = part[2]
    if group is not None:
        views.group_of[operation.process] = str(group)
    grp = str(group) if group else None
    queue = {tp: pos for tp, pos in positions.items() if tp[0] not in views.txn.topics}
    txn = {tp: pos for tp, pos in positions.items() if tp[0] in views.txn.topics}
    _add_events_split(
        views,
        operation.process,
        Assignment(operation.process, queue, grp, done.time) if queue or not txn else None,
        Assignment(operation.process, txn, grp, done.time) if txn else None,
    )


def _add_events_split(
    views: HistoryViews,
    process: str,
    queue: Assignment | Poll | None,
    txn: Assignment | Poll | None,
) -> None:
    """A consumer event's part on queue topics and its part on transactional topics, each
    to its own stream (an event with no partition at all counts as a queue one: it closes
    nothing, opens nothing)."""
    if queue is not None:
        views.consumer_events.setdefault(process, []).append(queue)
    if txn is not None:
        views.txn_consumer_events.setdefault(process, []).append(txn)


def _add_final(views: HistoryViews, operation: Operation) -> None:
    done = assert_done(operation.completion)
    topic = _field(done, done.value, "topic", str)
    partition = _field(done, done.value, "partition", int)
    hw = _field(done, done.value, "high_watermark", int)
    start = done.value.get("start_offset", 0)
    if not isinstance(start, int):
        raise HistoryFormatError(f"op {done.index} (final-read): start_offset is {start!r}")
    committed = _committed(operation.invoke)
    reads = _records(done, done.value, operation.process, final=True, committed=committed)
    lso = done.value.get("last_stable_offset")
    if lso is not None and not isinstance(lso, int):
        raise HistoryFormatError(f"op {done.index} (final-read): last_stable_offset is {lso!r}")
    final = FinalRead(topic, partition, start, hw, reads, done.time, lso)
    # A later successful final read of the same partition supersedes an earlier one.
    if topic in views.txn.topics:
        views.txn.reads.extend(reads)
        views.txn.finals[((topic, partition), committed)] = final
    else:
        views.reads.extend(reads)
        views.finals[(topic, partition)] = final


def assert_done(done: Op | None) -> Op:
    if done is None:
        raise HistoryFormatError("an ok operation without its completion")
    return done


def _add_events(views: HistoryViews, events: list[Op]) -> None:
    open_windows: dict[str, tuple[str, tuple[Any, ...], float, str | None]] = {}
    serial = 0
    for op in events:
        if op.f == LEADER:
            value = op.value
            views.leaders.append(
                LeaderObservation(
                    topic=_field(op, value, "topic", str),
                    partition=_field(op, value, "partition", int),
                    epoch=_field(op, value, "epoch", int),
                    leader=_field(op, value, "leader", int),
                    time=op.time,
                    source=str(value.get("source", "")),
                )
            )
        elif op.f == NEMESIS:
            phase = _field(op, op.value, "phase", str)
            fault = _field(op, op.value, "fault", str)
            fault_id = op.value.get("id")
            targets = tuple(op.value.get("targets") or ())
            if phase == "start":
                key = str(fault_id) if fault_id is not None else f"#{serial}"
                serial += 1
                open_windows[key] = (fault, targets, op.time, fault_id)
            elif phase == "heal":
                if fault == HEAL_ALL:
                    closing = list(open_windows)
                elif fault_id is not None and str(fault_id) in open_windows:
                    closing = [str(fault_id)]
                else:
                    closing = [k for k, w in open_windows.items() if w[0] == fault]
                for key in closing:
                    name, tgts, start, fid = open_windows.pop(key)
                    views.fault_windows.append(FaultWindow(name, tgts, start, op.time, fid))
                views.heals.append((op.time, not open_windows))
            else:
                raise HistoryFormatError(f"op {op.index} (nemesis): unknown phase {phase!r}")
    for name, tgts, start, fid in open_windows.values():
        views.fault_windows.append(FaultWindow(name, tgts, start, None, fid))
    views.fault_windows.sort(key=lambda w: w.start)
