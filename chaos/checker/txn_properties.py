"""The properties of transactions (Kafka's KIP-98/447 guarantees), each a pure function from
the transactional views (:mod:`chaos.checker.txn_views`) to the anomalies it finds.

Definitions ("committed read" = a read with isolation read_committed, a poll or the
read_committed final read; "the committed log" of a partition = its read_committed final
read when no transaction was left open, i.e. its last stable offset equals its high
watermark; a transaction is *aborted* when it was meant to abort, when the coordinator
acknowledged its abort, or when the complete logs show it so: its write is in the
read_uncommitted final read but not in the committed log):

- reads are consistent: one value per (partition, offset) (``inconsistent-offset``), one
  position per value (``duplicate``), every value was written by a transaction
  (``unknown-read``) to that partition (``wrong-partition``), and not read before the
  transaction began (``future-read``);
- no committed read returns a write of an aborted transaction (``aborted-read``, G1a), nor a
  write of a transaction before its commit began (``intermediate-read``, G1b);
- every write of a transaction whose commit returned is in the committed log
  (``lost-committed-write``), and of every transaction either all writes are in the
  committed logs or none (``non-atomic-transaction``);
- the committed log holds nothing the read_uncommitted final read lacks (``skipped-read``);
- consumers read in offset order (``nonmonotonic-read``) and never jump over a record
  their isolation level shows, as the final reads define it (``skipped-read``); a group's
  members together read every committed record between the first and last they read;
- exactly-once transform: with the group's final committed offset ``g`` of an input
  partition, every committed input below ``g`` has exactly one committed output
  (``transform-lost``, ``transform-duplicate``) and none at or past ``g`` has one
  (``transform-ahead``);
- committed offsets never move back: a committed transaction that began after another
  committed one ended commits offsets no lower, and the group's final offsets are no lower
  than any committed transaction's (``offset-regression``);
- no transaction stays open: after the run the last stable offset reaches the high
  watermark (``hanging-transaction``; the coordinator aborts a transaction that outlives
  its timeout).
"""

from __future__ import annotations

import bisect
from collections import defaultdict

from chaos.checker.model import (
    ABORTED_READ,
    DUPLICATE,
    FUTURE_READ,
    HANGING_TRANSACTION,
    INTERMEDIATE_READ,
    LOST_COMMITTED_WRITE,
    NON_ATOMIC_TRANSACTION,
    OFFSET_REGRESSION,
    SKIPPED_READ,
    TRANSFORM_AHEAD,
    TRANSFORM_DUPLICATE,
    TRANSFORM_LOST,
    UNKNOWN_READ,
    WRONG_PARTITION,
    Anomaly,
    Read,
)
from chaos.checker.properties import (
    Position,
    ReadIndex,
    check_consumer_order,
    duplicate_read,
    inconsistent_offsets,
    pos_label,
    witness,
)
from chaos.checker.txn_views import Txn, TxnViews
from chaos.checker.views import HistoryViews
from chaos.history import transform_input
from common.topic_partition import TopicPartition


def aborted_by_log(txv: TxnViews) -> set[str]:
    """Written values the complete final reads show as aborted: in the read_uncommitted
    final read, absent from the committed log."""
    out: set[str] = set()
    for (tp, committed), final in txv.finals.items():
        log = txv.committed_final(tp)
        if committed or log is None:
            continue
        kept = {r.value for r in log.reads}
        out.update(r.value for r in final.reads if r.value is not None and r.value not in kept)
    return out


def check_txn_reads(txv: TxnViews) -> list[Anomaly]:
    index = ReadIndex(txv.reads)
    committed_by_value: dict[str | None, list[Read]] = defaultdict(list)
    for r in txv.reads:
        if r.committed:
            committed_by_value[r.value].append(r)
    out = inconsistent_offsets(index)
    log_aborted = aborted_by_log(txv)
    for value, positions in index.by_value.items():
        if len(positions) > 1:
            out.append(duplicate_read(DUPLICATE, value, positions))
        txn = txv.writer_of.get(value) if value is not None else None
        if txn is None:
            first = min(positions.values(), key=lambda r: r.time)
            out.append(
                Anomaly(
                    UNKNOWN_READ,
                    f"value {value!r} read at {pos_label(min(positions))} was written by no "
                    "transaction",
                    first.time,
                    {"value": value, "reader": witness(first)},
                )
            )
            continue
        out.extend(
            _check_value_reads(
                txn, str(value), positions, committed_by_value[value], value in log_aborted
            )
        )
    return out


def _check_value_reads(
    txn: Txn,
    value: str,
    positions: dict[Position, Read],
    committed: list[Read],
    aborted_in_log: bool,
) -> list[Anomaly]:
    out: list[Anomaly] = []
    first = min(positions.values(), key=lambda r: r.time)
    sent_to = next(tp for tp, v in txn.writes if v == value)
    wrong = sorted(pos for pos in positions if (pos[0], pos[1]) != sent_to)
    if wrong:
        out.append(
            Anomaly(
                WRONG_PARTITION,
                f"value {value!r} written to {sent_to[0]}/{sent_to[1]} read at "
                + ", ".join(pos_label(p) for p in wrong),
                first.time,
                {"value": value, "positions": [list(p) for p in wrong]},
            )
        )
    if first.time < txn.invoke_time:
        out.append(
            Anomaly(
                FUTURE_READ,
                f"value {value!r} read at t={first.time:.3f}s, before transaction {txn.id} "
                f"began at t={txn.invoke_time:.3f}s",
                first.time,
                {"value": value, "transaction": txn.id, "reader": witness(first)},
            )
        )
    committed_reads = sorted(committed, key=lambda r: r.time)
    if not committed_reads:
        return out
    reader = committed_reads[0]
    if txn.aborted or aborted_in_log:
        why = (
            "meant to abort"
            if txn.intent == "abort"
            else "its abort was acknowledged"
            if txn.type == "fail"
            else "the final reads show it aborted"
        )
        out.append(
            Anomaly(
                ABORTED_READ,
                f"{reader.process} (read_committed) read {value!r} of transaction {txn.id}, "
                f"which aborted ({why})",
                reader.time,
                {"value": value, "transaction": txn.id, "reader": witness(reader)},
            )
        )
    elif txn.commit_at is not None and reader.time < txn.commit_at:
        out.append(
            Anomaly(
                INTERMEDIATE_READ,
                f"{reader.process} (read_committed) read {value!r} at t={reader.time:.3f}s, "
                f"before transaction {txn.id} began to commit at t={txn.commit_at:.3f}s",
                reader.time,
                {"value": value, "transaction": txn.id, "reader": witness(reader)},
            )
        )
    return out


def check_txn_writes(txv: TxnViews) -> list[Anomaly]:
    """Committed writes are kept, transactions are all-or-nothing, logs agree, none hangs."""
    out: list[Anomaly] = []
    logs = {tp: {r.value for r in f.reads} for (tp, c), f in txv.finals.items() if c}
    complete = {tp for tp in logs if txv.committed_final(tp) is not None}
    for txn in txv.txns.values():
        decided = [(tp, v) for tp, v in txn.writes if tp in complete]
        present = [(tp, v) for tp, v in decided if v in logs[tp]]
        missing = [(tp, v) for tp, v in decided if v not in logs[tp]]
        if txn.committed and missing:
            out.append(
                Anomaly(
                    LOST_COMMITTED_WRITE,
                    f"transaction {txn.id} committed, but the committed log lacks "
                    + ", ".join(f"{v!r} ({tp[0]}/{tp[1]})" for tp, v in missing),
                    txn.complete_time,
                    {"transaction": txn.id, "missing": [[*tp, v] for tp, v in missing]},
                )
            )
        elif present and missing:
            out.append(
                Anomaly(
                    NON_ATOMIC_TRANSACTION,
                    f"transaction {txn.id} is partly committed: "
                    f"{len(present)} write(s) in the committed logs, {len(missing)} not",
                    txn.complete_time,
                    {
                        "transaction": txn.id,
                        "present": [[*tp, v] for tp, v in present],
                        "missing": [[*tp, v] for tp, v in missing],
                    },
                )
            )
    for (tp, committed), final in sorted(txv.finals.items()):
        if not committed:
            continue
        if final.last_stable_offset is not None and final.last_stable_offset < final.high_watermark:
            out.append(
                Anomaly(
                    HANGING_TRANSACTION,
                    f"{tp[0]}/{tp[1]}: the last stable offset stayed at "
                    f"{final.last_stable_offset}, below the high watermark "
                    f"{final.high_watermark}, after every producer stopped",
                    final.time,
                    {
                        "partition": list(tp),
                        "last_stable_offset": final.last_stable_offset,
                        "high_watermark": final.high_watermark,
                    },
                )
            )
        everything = txv.final(tp, False)
        if everything is None:
            continue
        seen = {(r.offset, r.value) for r in everything.reads}
        lacking = [r for r in final.reads if (r.offset, r.value) not in seen]
        if lacking and everything.high_watermark >= max(r.offset for r in lacking) + 1:
            out.append(
                Anomaly(
                    SKIPPED_READ,
                    f"the read_uncommitted final read of {tp[0]}/{tp[1]} lacks committed "
                    f"record(s) at offsets {[r.offset for r in lacking][:10]}",
                    final.time,
                    {"partition": list(tp), "offsets": [r.offset for r in lacking]},
                )
            )
    return out


def check_txn_consumers(views: HistoryViews) -> list[Anomaly]:
    """Order and no skipping, against what each isolation level shows (the final reads)."""
    txv = views.txn
    shown: dict[tuple[TopicPartition, bool], list[int]] = {}
    for (tp, committed), final in txv.finals.items():
        if committed and txv.committed_final(tp) is None:
            continue
        shown[(tp, committed)] = sorted(r.offset for r in final.reads)

    def between(tp: TopicPartition, committed: bool, low: int, high: int) -> list[int]:
        offsets = shown.get((tp, committed))
        if offsets is None:  # nothing to hold the reader to
            return []
        return offsets[bisect.bisect_right(offsets, low) : bisect.bisect_left(offsets, high)]

    return check_consumer_order(views.txn_consumer_events, views.group_of, between)


def check_transform(txv: TxnViews) -> tuple[list[Anomaly], list[str]]:
    """Exactly-once consume-transform-produce; returns the anomalies and notes on what
    could not be decided."""
    out: list[Anomaly] = []
    notes: list[str] = []
    by_group: dict[str, list[Txn]] = defaultdict(list)
    for txn in txv.txns.values():
        if txn.group is not None:
            by_group[txn.group].append(txn)
    for group, txns in sorted(by_group.items()):
        offsets = txv.group_offsets.get(group)
        if offsets is None:
            notes.append(f"group {group}: no committed offsets recorded; transform unchecked")
            continue
        inputs = {tp for txn in txns for tp, _o, _v in txn.reads}
        outputs = {tp for txn in txns for tp, _v in txn.writes}
        logs_in = {tp: txv.committed_final(tp) for tp in inputs}
        logs_out = [txv.committed_final(tp) for tp in outputs]
        if any(f is None for f in logs_in.values()) or any(f is None for f in logs_out):
            notes.append(f"group {group}: a committed log is incomplete; transform unchecked")
            continue
        made: dict[str, list[Read]] = defaultdict(list)
        for log in logs_out:
            assert log is not None
            for r in log.reads:
                if r.value is not None:
                    made[transform_input(r.value)].append(r)
        for tp, log in sorted(logs_in.items()):
            assert log is not None
            committed_to = offsets.get(tp, 0)
            for r in log.reads:
                got = made.get(str(r.value), [])
                at = pos_label((*tp, r.offset))
                where = ", ".join(pos_label((o.topic, o.partition, o.offset)) for o in got)
                if r.offset < committed_to and not got:
                    out.append(
                        Anomaly(
                            TRANSFORM_LOST,
                            f"group {group} committed {tp[0]}/{tp[1]} to {committed_to}, but "
                            f"input {at} ({r.value!r}) has no committed output",
                            None,
                            {"group": group, "input": [*tp, r.offset, r.value]},
                        )
                    )
                elif len(got) > 1:
                    out.append(
                        Anomaly(
                            TRANSFORM_DUPLICATE,
                            f"input {at} ({r.value!r}) has {len(got)} committed outputs: {where}",
                            got[0].time,
                            {"group": group, "input": [*tp, r.offset, r.value]},
                        )
                    )
                if r.offset >= committed_to and got:
                    out.append(
                        Anomaly(
                            TRANSFORM_AHEAD,
                            f"input {at} is at or past group {group}'s "
                            f"committed offset {committed_to}, yet has committed output {where}",
                            got[0].time,
                            {"group": group, "input": [*tp, r.offset, r.value]},
                        )
                    )
    return out, notes


def check_offsets(txv: TxnViews) -> list[Anomaly]:
    """Committed offsets never move backwards."""
    out: list[Anomaly] = []
    committed = [t for t in txv.txns.values() if t.committed and t.group and t.offsets]
    by_key: dict[tuple[str, TopicPartition], list[tuple[Txn, int]]] = defaultdict(list)
    for txn in committed:
        for tp, offset in txn.offsets:
            by_key[(str(txn.group), tp)].append((txn, offset))
    for (group, tp), entries in sorted(by_key.items()):
        ended = sorted(entries, key=lambda e: e[0].complete_time or 0.0)
        best: tuple[Txn, int] | None = None
        i = 0
        for txn, offset in sorted(entries, key=lambda e: e[0].invoke_time):
            while i < len(ended) and (ended[i][0].complete_time or 0.0) < txn.invoke_time:
                if best is None or ended[i][1] > best[1]:
                    best = ended[i]
                i += 1
            if best is not None and offset < best[1]:
                out.append(
                    Anomaly(
                        OFFSET_REGRESSION,
                        f"group {group} committed {tp[0]}/{tp[1]} to {best[1]} in {best[0].id}, "
                        f"then to {offset} in {txn.id}, which began after",
                        txn.invoke_time,
                        {"group": group, "partition": list(tp), "from": best[1], "to": offset},
                    )
                )
        final = txv.group_offsets.get(group, {})
        highest = max(entries, key=lambda e: e[1])
        if final and final.get(tp, -1) < highest[1]:
            out.append(
                Anomaly(
                    OFFSET_REGRESSION,
                    f"group {group}'s final offset of {tp[0]}/{tp[1]} is {final.get(tp)}, below "
                    f"{highest[1]} committed by {highest[0].id}",
                    None,
                    {"group": group, "partition": list(tp), "final": final.get(tp)},
                )
            )
    return out


def txn_write_attempts(txv: TxnViews) -> list[tuple[TopicPartition, float, float | None, bool]]:
    """(partition, invoke time, completion time, committed) per write of a transaction meant
    to commit: what liveness after a heal looks for, beside acknowledged sends."""
    return [
        (tp, txn.invoke_time, txn.complete_time, txn.committed)
        for txn in txv.txns.values()
        if txn.intent == "commit"
        for tp in dict.fromkeys(tp for tp, _v in txn.writes)
    ]
