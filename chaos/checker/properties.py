"""The safety and liveness properties of a log under faults (docs/chaos.md, Checker), each a
pure function from the history's views to the anomalies it finds.

Definitions (tp = topic/partition; "read" = seen by any consumer poll or final read):

- reads are consistent: at most one value per (tp, offset) (else ``inconsistent-offset``),
  at most one (tp, offset) per value (else ``duplicate``; ``duplicate-non-idempotent``, not a
  violation, when the send's producer was not idempotent); every value read was sent
  (``unknown-read``), not by a send that definitely failed (``failed-write-read``), to
  that partition (``wrong-partition``), and not before the send began (``future-read``);
- an acknowledged send's offset holds its value (``wrong-offset``), and an acknowledged
  send is read (``lost-write``) when the partition had a final read or a read went past its
  offset ("any value below the highest read offset"); for acks=1 sends both are counted as
  ``*-acks1``, which Kafka permits;
- consumers by assignment read each partition exactly in order from their position: never
  back (``nonmonotonic-read``), never over a gap (``skipped-read``); group members may
  re-read after a rebalance, so each poll must be in order and the union of a group's reads
  of a partition must have no gap; the final read covers [start, HW) exactly
  (``incomplete-final-read`` if it stopped short);
- a send acknowledged before another began has the lower offset (``realtime-order``); only
  acks=all sends are used as the earlier one, since an acks=1 record may be truncated away
  and its offset legitimately reused;
- no consumer read at or above the partition's final high watermark (``uncommitted-read``:
  the read was uncommitted, or committed data vanished);
- at most one leader per (tp, leader epoch) among the observations (``multiple-leaders``);
- after each heal that leaves no fault active, every partition being written gets an
  acknowledged write within the liveness window (``unavailable-after-heal``).
"""

from __future__ import annotations

import bisect
import itertools
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping

from chaos.checker.model import (
    DUPLICATE,
    DUPLICATE_NON_IDEMPOTENT,
    FAILED_WRITE_READ,
    FUTURE_READ,
    INCOMPLETE_FINAL_READ,
    INCONSISTENT_OFFSET,
    LOST_WRITE,
    LOST_WRITE_ACKS1,
    MULTIPLE_LEADERS,
    NONMONOTONIC_READ,
    REALTIME_ORDER,
    SKIPPED_READ,
    UNAVAILABLE_AFTER_HEAL,
    UNCOMMITTED_READ,
    UNKNOWN_READ,
    WRONG_OFFSET,
    WRONG_OFFSET_ACKS1,
    WRONG_PARTITION,
    Anomaly,
    FinalRead,
    Read,
    Recovery,
    Send,
)
from chaos.checker.views import Assignment, HistoryViews, Poll
from common.topic_partition import TopicPartition

Position = tuple[str, int, int]  # topic, partition, offset


class ReadIndex:
    """Every read, by position and by value (first reader of each kept as the witness)."""

    def __init__(self, reads: Iterable[Read]) -> None:
        self.by_position: dict[Position, dict[str | None, Read]] = defaultdict(dict)
        self.by_value: dict[str | None, dict[Position, Read]] = defaultdict(dict)
        self.max_offset: dict[TopicPartition, int] = {}
        for r in reads:
            pos = (r.topic, r.partition, r.offset)
            self.by_position[pos].setdefault(r.value, r)
            self.by_value[r.value].setdefault(pos, r)
            if r.offset > self.max_offset.get(r.tp, -1):
                self.max_offset[r.tp] = r.offset


def pos_label(p: Position) -> str:
    """``topic/partition@offset``, as anomaly messages name a position."""
    return f"{p[0]}/{p[1]}@{p[2]}"


def witness(r: Read) -> dict[str, object]:
    """Who read it, when, and how: an anomaly's evidence."""
    return {"process": r.process, "time": r.time, "final": r.final, "committed": r.committed}


def inconsistent_offsets(index: ReadIndex) -> list[Anomaly]:
    """Positions read with more than one value (across consumers and final reads)."""
    out: list[Anomaly] = []
    for pos, values in index.by_position.items():
        if len(values) > 1:
            readers = {str(v): witness(r) for v, r in values.items()}
            out.append(
                Anomaly(
                    INCONSISTENT_OFFSET,
                    f"{pos_label(pos)} holds {len(values)} values: {sorted(map(str, values))}",
                    min(r.time for r in values.values()),
                    {"position": list(pos), "values": readers},
                )
            )
    return out


def duplicate_read(kind: str, value: str | None, positions: dict[Position, Read]) -> Anomaly:
    """One value read at several positions (``kind``: a duplicate, or an allowed one)."""
    first = min(positions.values(), key=lambda r: r.time)
    return Anomaly(
        kind,
        f"value {value!r} read at {len(positions)} offsets: "
        + ", ".join(pos_label(p) for p in sorted(positions)),
        first.time,
        {"value": value, "positions": [list(p) for p in sorted(positions)]},
    )


def check_reads(views: HistoryViews, index: ReadIndex) -> list[Anomaly]:
    out = inconsistent_offsets(index)
    for value, positions in index.by_value.items():
        first = min(positions.values(), key=lambda r: r.time)
        send = views.sends.get(value) if value is not None else None
        if len(positions) > 1:
            plain = send is not None and not send.idempotent
            out.append(
                duplicate_read(DUPLICATE_NON_IDEMPOTENT if plain else DUPLICATE, value, positions)
            )
        if send is None:
            out.append(
                Anomaly(
                    UNKNOWN_READ,
                    f"value {value!r} read at {pos_label(min(positions))} was never sent",
                    first.time,
                    {"value": value, "reader": witness(first)},
                )
            )
            continue
        if send.type == "fail":
            out.append(
                Anomaly(
                    FAILED_WRITE_READ,
                    f"value {value!r} was read although its send failed ({send.error})",
                    first.time,
                    {"value": value, "error": send.error, "reader": witness(first)},
                )
            )
        wrong = sorted(p for p in positions if (p[0], p[1]) != send.tp)
        if wrong:
            out.append(
                Anomaly(
                    WRONG_PARTITION,
                    f"value {value!r} sent to {send.topic}/{send.partition} read at "
                    + ", ".join(pos_label(p) for p in wrong),
                    first.time,
                    {"value": value, "positions": [list(p) for p in wrong]},
                )
            )
        if first.time < send.invoke_time:
            out.append(
                Anomaly(
                    FUTURE_READ,
                    f"value {value!r} read at t={first.time:.3f}s, before its send began "
                    f"at t={send.invoke_time:.3f}s",
                    first.time,
                    {"value": value, "reader": witness(first)},
                )
            )
    return out


def check_acknowledged(views: HistoryViews, index: ReadIndex) -> tuple[list[Anomaly], int]:
    """Acknowledged sends: the acked offset holds the value, and the value was read.
    Returns the anomalies and how many acked sends could not be checked for loss."""
    out: list[Anomaly] = []
    unchecked = 0
    for send in views.sends.values():
        if send.type != "ok":
            continue
        # A client that could not tell the offset (None) is still held to the value.
        offset = send.offset if send.offset is not None else -1
        acked = (send.topic, send.partition, offset)
        read_at = index.by_value.get(send.value)
        others = {v: r for v, r in index.by_position.get(acked, {}).items() if v != send.value}
        if read_at:
            if send.offset is not None and (acked not in read_at or others):
                out.append(
                    Anomaly(
                        WRONG_OFFSET if send.safe else WRONG_OFFSET_ACKS1,
                        f"value {send.value!r} acknowledged at {pos_label(acked)} "
                        f"(acks={send.acks}) but read at "
                        + ", ".join(pos_label(p) for p in sorted(read_at))
                        + (
                            f"; {pos_label(acked)} holds {sorted(map(str, others))}"
                            if others
                            else ""
                        ),
                        send.complete_time,
                        {
                            "value": send.value,
                            "acked": list(acked),
                            "read_at": [list(p) for p in sorted(read_at)],
                            "acks": send.acks,
                        },
                    )
                )
            continue
        final = views.finals.get(send.tp)
        max_read = index.max_offset.get(send.tp, -1)
        if final is None and max_read <= offset:
            unchecked += 1
            continue
        reason = (
            f"final read of {send.topic}/{send.partition} to HW {final.high_watermark}"
            if final is not None
            else f"reads reached offset {max_read}"
        )
        held = f"; the offset holds {sorted(map(str, others))}" if others else ""
        out.append(
            Anomaly(
                LOST_WRITE if send.safe else LOST_WRITE_ACKS1,
                f"value {send.value!r} acknowledged at {pos_label(acked)} (acks={send.acks}) was "
                f"never read ({reason}){held}",
                send.complete_time,
                {"value": send.value, "acked": list(acked), "acks": send.acks},
            )
        )
    return out, unchecked


# Offsets strictly between ``low`` and ``high`` of a partition that a reader of the given
# isolation (read_committed?) must have read had it read both ends: a record sits there.
Shown = Callable[[TopicPartition, bool, int, int], list[int]]


def every_offset(_tp: TopicPartition, _committed: bool, low: int, high: int) -> list[int]:
    """A log without transactions: every offset holds a record."""
    return list(range(low + 1, high))


def check_consumers(views: HistoryViews) -> list[Anomaly]:
    out = check_consumer_order(views.consumer_events, views.group_of, every_offset)
    for final in views.finals.values():
        out.extend(_check_final(final))
    return out


def check_consumer_order(
    events_by_process: Mapping[str, list[Assignment | Poll]],
    group_of: Mapping[str, str],
    shown: Shown,
) -> list[Anomaly]:
    """Consumers by assignment read each partition in order from their position, never over
    a record (``shown``); group members may re-read after a rebalance, so each poll must be
    in order and the group's reads of a partition together may skip no record."""
    out: list[Anomaly] = []
    group_offsets: dict[tuple[str, TopicPartition, bool], set[int]] = defaultdict(set)
    for process, events in events_by_process.items():
        group = group_of.get(process)
        expected: dict[TopicPartition, int | None] = {}
        for event in events:
            if isinstance(event, Assignment):
                expected = dict(event.positions)
                continue
            if group is not None:
                for r in event.reads:
                    group_offsets[(group, r.tp, r.committed)].add(r.offset)
                # A member's position after a rebalance is unknown; within one poll the
                # records of a partition must still be consecutive.
                expected = {}
            out.extend(_sequence(process, event, expected, shown))
    for (group, tp, committed), offsets in group_offsets.items():
        for a, b in itertools.pairwise(sorted(offsets)):
            missed = shown(tp, committed, a, b)
            if missed:
                out.append(
                    Anomaly(
                        SKIPPED_READ,
                        f"group {group} read {tp[0]}/{tp[1]} offsets {a} and {b} but none of "
                        f"{_span(missed)}",
                        None,
                        {"group": group, "partition": list(tp), "missing": [missed[0], missed[-1]]},
                    )
                )
    return out


def _span(offsets: list[int]) -> str:
    if offsets == list(range(offsets[0], offsets[-1] + 1)):
        return f"{offsets[0]}..{offsets[-1]}"
    return ", ".join(map(str, offsets[:10])) + (" ..." if len(offsets) > 10 else "")


def _sequence(
    process: str, poll: Poll, expected: dict[TopicPartition, int | None], shown: Shown
) -> list[Anomaly]:
    out: list[Anomaly] = []
    for r in poll.reads:
        want = expected.get(r.tp)
        if want is not None and r.offset < want:
            out.append(
                Anomaly(
                    NONMONOTONIC_READ,
                    f"{process} read {r.topic}/{r.partition}@{r.offset} after reaching {want}",
                    poll.time,
                    {
                        "process": process,
                        "partition": list(r.tp),
                        "offset": r.offset,
                        "expected": want,
                    },
                )
            )
        elif want is not None and r.offset > want:
            missed = shown(r.tp, r.committed, want - 1, r.offset)
            if missed:
                out.append(
                    Anomaly(
                        SKIPPED_READ,
                        f"{process} skipped {r.topic}/{r.partition} offsets {_span(missed)}",
                        poll.time,
                        {
                            "process": process,
                            "partition": list(r.tp),
                            "missing": [missed[0], missed[-1]],
                        },
                    )
                )
        expected[r.tp] = r.offset + 1
    return out


def _check_final(final: FinalRead) -> list[Anomaly]:
    if final.complete:
        return []
    process = final.reads[0].process if final.reads else "final"
    expected: dict[TopicPartition, int | None] = {
        (final.topic, final.partition): final.start_offset
    }
    out = _sequence(process, Poll(process, final.reads, final.time), expected, every_offset)
    last = max(final.offsets, default=final.start_offset - 1)
    if last < final.high_watermark - 1:
        out.append(
            Anomaly(
                INCOMPLETE_FINAL_READ,
                f"final read of {final.topic}/{final.partition} ended at offset {last}, "
                f"below its high watermark {final.high_watermark}",
                final.time,
                {
                    "partition": [final.topic, final.partition],
                    "last": last,
                    "high_watermark": final.high_watermark,
                },
            )
        )
    return out


def check_realtime_order(views: HistoryViews) -> list[Anomaly]:
    out: list[Anomaly] = []
    acked: dict[TopicPartition, list[Send]] = defaultdict(list)
    for send in views.sends.values():
        if send.type == "ok" and send.offset is not None:
            acked[send.tp].append(send)
    for sends in acked.values():
        earlier = sorted(
            (s for s in sends if s.safe and s.complete_time is not None),
            key=lambda s: s.complete_time or 0.0,
        )
        best: Send | None = None
        i = 0
        for b in sorted(sends, key=lambda s: s.invoke_time):
            while i < len(earlier) and (earlier[i].complete_time or 0.0) < b.invoke_time:
                if best is None or (earlier[i].offset or 0) > (best.offset or 0):
                    best = earlier[i]
                i += 1
            if best is not None and b.offset is not None and (best.offset or 0) >= b.offset:
                out.append(
                    Anomaly(
                        REALTIME_ORDER,
                        f"{best.value!r} was acknowledged at offset {best.offset} "
                        f"(t={best.complete_time:.3f}s) before {b.value!r} was sent "
                        f"(t={b.invoke_time:.3f}s), yet {b.value!r} got offset {b.offset}",
                        b.invoke_time,
                        {
                            "earlier": best.value,
                            "earlier_offset": best.offset,
                            "later": b.value,
                            "later_offset": b.offset,
                            "partition": [b.topic, b.partition],
                        },
                    )
                )
    return out


def check_uncommitted(views: HistoryViews) -> list[Anomaly]:
    out: list[Anomaly] = []
    for r in views.reads:
        final = views.finals.get(r.tp)
        if r.final or final is None or r.offset < final.high_watermark:
            continue
        out.append(
            Anomaly(
                UNCOMMITTED_READ,
                f"{r.process} read {r.topic}/{r.partition}@{r.offset} ({r.value!r}), at or above "
                f"the final high watermark {final.high_watermark}",
                r.time,
                {
                    "process": r.process,
                    "position": [r.topic, r.partition, r.offset],
                    "value": r.value,
                    "high_watermark": final.high_watermark,
                },
            )
        )
    return out


def check_leaders(views: HistoryViews) -> list[Anomaly]:
    seen: dict[tuple[str, int, int], dict[int, float]] = defaultdict(dict)
    for obs in views.leaders:
        if obs.leader >= 0:
            seen[(obs.topic, obs.partition, obs.epoch)].setdefault(obs.leader, obs.time)
    out: list[Anomaly] = []
    for (topic, partition, epoch), leaders in sorted(seen.items()):
        if len(leaders) > 1:
            out.append(
                Anomaly(
                    MULTIPLE_LEADERS,
                    f"{topic}/{partition} had leaders {sorted(leaders)} in leader epoch {epoch}",
                    max(leaders.values()),
                    {
                        "partition": [topic, partition],
                        "epoch": epoch,
                        "leaders": {str(k): v for k, v in sorted(leaders.items())},
                    },
                )
            )
    return out


# A write attempt as liveness sees it: (partition, invoke time, completion time or None,
# acknowledged?) — an acknowledged send, or a write of a committed transaction.
WriteAttempt = tuple[TopicPartition, float, float | None, bool]


def check_liveness(
    views: HistoryViews, window_s: float, extra_attempts: Iterable[WriteAttempt] = ()
) -> tuple[list[Anomaly], list[Recovery], list[str]]:
    """Writes succeed again after every heal that leaves no fault active (sends, and the
    ``extra_attempts``: transactions' writes)."""
    attempts: list[WriteAttempt] = [
        (s.tp, s.invoke_time, s.complete_time, s.type == "ok") for s in views.sends.values()
    ]
    attempts += extra_attempts
    ok_times: dict[TopicPartition, list[float]] = defaultdict(list)
    # Until when the history shows writes to a partition being tried (a send still in flight
    # at the end counts until the end): past that, its silence proves nothing.
    tried_until: dict[TopicPartition, float] = {}
    for tp, _invoked, completed, acked in attempts:
        if acked and completed is not None:
            ok_times[tp].append(completed)
        last = completed if completed is not None else views.end_time
        tried_until[tp] = max(tried_until.get(tp, 0.0), last)
    for times in ok_times.values():
        times.sort()
    starts = sorted(w.start for w in views.fault_windows)
    anomalies: list[Anomaly] = []
    recoveries: list[Recovery] = []
    notes: list[str] = []
    for heal_time, all_healed in views.heals:
        if not all_healed:
            continue
        deadline = heal_time + window_s
        after = bisect.bisect_right(starts, heal_time)
        next_start = starts[after] if after < len(starts) else None
        # Partitions someone was writing to in the window after the heal.
        active = {
            tp
            for tp, invoked, completed, _acked in attempts
            if invoked <= deadline and (completed is None or completed >= heal_time)
        }
        if not active:
            continue
        worst = 0.0
        unrecovered: list[TopicPartition] = []
        for tp in sorted(active):
            times = ok_times.get(tp, [])
            i = bisect.bisect_left(times, heal_time)
            if i < len(times) and times[i] <= deadline:
                worst = max(worst, times[i] - heal_time)
            else:
                unrecovered.append(tp)
        recoveries.append(
            Recovery(heal_time, None if unrecovered else round(worst, 3), tuple(unrecovered))
        )
        if not unrecovered:
            continue
        cut_short = next_start is not None and next_start < deadline
        undecided = [tp for tp in unrecovered if tried_until.get(tp, 0.0) < deadline]
        if cut_short or undecided:
            notes.append(
                f"heal at t={heal_time:.1f}s: {len(unrecovered)} partition(s) without an "
                f"acknowledged write before the next fault or the end of their writes "
                f"(liveness not decidable)"
            )
            continue
        anomalies.append(
            Anomaly(
                UNAVAILABLE_AFTER_HEAL,
                f"no acknowledged write within {window_s:g}s after the heal at "
                f"t={heal_time:.1f}s on " + ", ".join(f"{t}/{p}" for t, p in unrecovered),
                heal_time,
                {
                    "heal_time": heal_time,
                    "window_s": window_s,
                    "partitions": [list(tp) for tp in unrecovered],
                },
            )
        )
    return anomalies, recoveries, notes
