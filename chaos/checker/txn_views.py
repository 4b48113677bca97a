"""The views of a history's transactions (operations ``txn`` and ``group-offsets``, and the
reads of the topics transactions write), built by :func:`chaos.checker.views.build_views`.

A topic is *transactional* when some ``txn`` operation writes it. Its reads (polls of either
isolation and both final reads) land here rather than in the queue views: offsets there have
gaps (markers, aborted records) and values may belong to aborted transactions, so the queue
properties' definitions do not apply as they stand (the transactional ones in
:mod:`chaos.checker.txn_properties` do).

Thread-safety: plain values, filled once.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from chaos.checker.model import FinalRead, Read
from chaos.history import FAIL, OK, TXN, HistoryFormatError, Op, Operation
from common.topic_partition import TopicPartition

COMMIT = "commit"
ABORT = "abort"


@dataclass(frozen=True, slots=True)
class Txn:
    """One transaction: its intent, writes, transform inputs and offsets, and outcome."""

    id: str
    process: str
    intent: str  # commit | abort
    writes: tuple[tuple[TopicPartition, str], ...]
    type: str  # ok | fail | info
    invoke_time: float
    complete_time: float | None
    commit_at: float | None = None  # when the client began to commit
    group: str | None = None
    offsets: tuple[tuple[TopicPartition, int], ...] = ()
    reads: tuple[tuple[TopicPartition, int, str | None], ...] = ()

    @property
    def committed(self) -> bool:
        """Known to have committed (the commit returned)."""
        return self.type == OK and self.intent == COMMIT

    @property
    def aborted(self) -> bool:
        """Known never to commit: an intended abort (no commit is ever asked for), or an
        abort the coordinator acknowledged."""
        return self.intent == ABORT or self.type == FAIL


@dataclass
class TxnViews:
    topics: set[str] = field(default_factory=set)
    txns: dict[str, Txn] = field(default_factory=dict)
    writer_of: dict[str, Txn] = field(default_factory=dict)  # written value -> its txn
    duplicate_writes: list[str] = field(default_factory=list)  # values two txns wrote
    reads: list[Read] = field(default_factory=list)  # polls and final reads, both isolations
    # Final reads by (partition, committed?); a later successful one supersedes.
    finals: dict[tuple[TopicPartition, bool], FinalRead] = field(default_factory=dict)
    # Each group's committed offsets as last recorded (group-offsets).
    group_offsets: dict[str, dict[TopicPartition, int]] = field(default_factory=dict)

    def final(self, tp: TopicPartition, committed: bool) -> FinalRead | None:
        return self.finals.get((tp, committed))

    def committed_final(self, tp: TopicPartition) -> FinalRead | None:
        """The read_committed final read of ``tp`` when it covered everything written (no
        transaction left open: last stable offset = high watermark), else None."""
        final = self.finals.get((tp, True))
        if final is None or final.last_stable_offset != final.high_watermark:
            return None
        return final


def transactional_topics(ops: Iterable[Op]) -> set[str]:
    """Every topic a ``txn`` invoke writes."""
    topics: set[str] = set()
    for op in ops:
        if op.f == TXN and op.type == "invoke" and isinstance(op.value, dict):
            for write in op.value.get("writes") or ():
                if isinstance(write, list | tuple) and write and isinstance(write[0], str):
                    topics.add(write[0])
    return topics


def _position(op: Op, item: Any, width: int) -> tuple[Any, ...]:
    if (
        not isinstance(item, list | tuple)
        or len(item) != width
        or not isinstance(item[0], str)
        or not isinstance(item[1], int)
    ):
        raise HistoryFormatError(f"op {op.index} (txn): {item!r} is not a {width}-item position")
    return tuple(item)


def add_txn(txv: TxnViews, operation: Operation) -> None:
    inv = operation.invoke
    value = inv.value if isinstance(inv.value, dict) else {}
    txn_id, intent = value.get("id"), value.get("intent")
    if not isinstance(txn_id, str) or intent not in (COMMIT, ABORT):
        raise HistoryFormatError(f"op {inv.index} (txn): needs a string id and an intent")
    writes: list[tuple[TopicPartition, str]] = []
    for item in value.get("writes") or ():
        topic, partition, written = _position(inv, item, 3)
        if not isinstance(written, str):
            raise HistoryFormatError(f"op {inv.index} (txn): written value {written!r}")
        writes.append(((topic, partition), written))
    offsets = tuple(
        ((t, p), int(o)) for t, p, o in (_position(inv, i, 3) for i in value.get("offsets") or ())
    )
    reads = tuple(
        ((t, p), int(o), v)
        for t, p, o, v in (_position(inv, i, 4) for i in value.get("reads") or ())
    )
    done = operation.completion
    result = done.value if done is not None and isinstance(done.value, dict) else {}
    commit_at = result.get("commit_at")
    group = value.get("group")
    txn = Txn(
        id=txn_id,
        process=inv.process,
        intent=intent,
        writes=tuple(writes),
        type=operation.type,
        invoke_time=inv.time,
        complete_time=done.time if done is not None else None,
        commit_at=float(commit_at) if isinstance(commit_at, int | float) else None,
        group=group if isinstance(group, str) else None,
        offsets=offsets,
        reads=reads,
    )
    if txn_id in txv.txns:
        raise HistoryFormatError(f"op {inv.index} (txn): transaction id {txn_id!r} reused")
    txv.txns[txn_id] = txn
    for _tp, written in txn.writes:
        if written in txv.writer_of:
            txv.duplicate_writes.append(written)
        else:
            txv.writer_of[written] = txn


def add_group_offsets(txv: TxnViews, operation: Operation) -> None:
    done = operation.completion
    if operation.type != OK or done is None or not isinstance(done.value, dict):
        return
    group = done.value.get("group")
    if not isinstance(group, str):
        raise HistoryFormatError(f"op {done.index} (group-offsets): no group")
    txv.group_offsets[group] = {
        (t, p): int(o)
        for t, p, o in (_position(done, i, 3) for i in done.value.get("offsets") or ())
    }
