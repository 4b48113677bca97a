"""The checker's vocabulary: anomaly kinds, the views it builds of a history, and its result.

Views (built once by chaos.checker.views from the paired history):

- :class:`Send`: one produced value with its outcome (``ok`` with the acknowledged offset,
  ``fail``, or ``info`` = unknown) and its acks setting;
- :class:`Read`: one record seen by a consumer poll or a final read (topic, partition,
  offset, value, who read it and when);
- :class:`FinalRead`: the after-heal read of one partition from its start to the high
  watermark;
- :class:`FaultWindow`: a nemesis fault from start to heal.

Thread-safety: plain immutable values (CheckResult is filled once by ``check``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from common.topic_partition import TopicPartition

# -- anomaly kinds (safety violations unless listed in INFORMATIONAL_KINDS) ----------------

LOST_WRITE = "lost-write"  # an acks=all acknowledged value never read
DUPLICATE = "duplicate"  # one value at two offsets (sent by an idempotent producer)
INCONSISTENT_OFFSET = "inconsistent-offset"  # two values at one offset (readers or replicas)
WRONG_OFFSET = "wrong-offset"  # an acknowledged offset holds another value
WRONG_PARTITION = "wrong-partition"  # a value read from a partition it was not sent to
NONMONOTONIC_READ = "nonmonotonic-read"  # a consumer went back
SKIPPED_READ = "skipped-read"  # a consumer (or a group, or the final read) jumped over offsets
INCOMPLETE_FINAL_READ = "incomplete-final-read"  # the final read stopped short of the HW
REALTIME_ORDER = "realtime-order"  # acked before B began, yet offset >= B's
UNKNOWN_READ = "unknown-read"  # a value never sent
FAILED_WRITE_READ = "failed-write-read"  # a value whose send definitely failed, read
FUTURE_READ = "future-read"  # read before its send was invoked
UNCOMMITTED_READ = "uncommitted-read"  # read at an offset at or above the final HW
MULTIPLE_LEADERS = "multiple-leaders"  # two leaders observed in one leader epoch
DIVERGENT_REPLICAS = "divergent-replicas"  # in-sync replicas differ below the HW
UNAVAILABLE_AFTER_HEAL = "unavailable-after-heal"  # no acknowledged write soon after a heal
# Transactions (topics written by transactional producers):
ABORTED_READ = "aborted-read"  # read_committed returned a record of an aborted transaction
INTERMEDIATE_READ = "intermediate-read"  # read_committed saw a write before its commit began
LOST_COMMITTED_WRITE = "lost-committed-write"  # a committed transaction's write never read
NON_ATOMIC_TRANSACTION = "non-atomic-transaction"  # only part of a transaction is committed
TRANSFORM_LOST = "transform-lost"  # an input below the committed offset without its output
TRANSFORM_DUPLICATE = "transform-duplicate"  # an input with two committed outputs
TRANSFORM_AHEAD = "transform-ahead"  # an output of an input at or past the committed offset
OFFSET_REGRESSION = "offset-regression"  # a group's committed offset moved backwards
HANGING_TRANSACTION = "hanging-transaction"  # the last stable offset stuck below the HW

# acks=1 acknowledges before followers have the record: Kafka may lose it on failover, so
# these are reported (to count them) but are not violations.
LOST_WRITE_ACKS1 = "lost-write-acks1"
WRONG_OFFSET_ACKS1 = "wrong-offset-acks1"
# A producer without idempotence retries a batch whose answer was lost and so may append it
# twice (at-least-once): counted, not a violation.
DUPLICATE_NON_IDEMPOTENT = "duplicate-non-idempotent"
INFORMATIONAL_KINDS = frozenset({LOST_WRITE_ACKS1, WRONG_OFFSET_ACKS1, DUPLICATE_NON_IDEMPOTENT})

ALL_KINDS = (
    LOST_WRITE,
    DUPLICATE,
    INCONSISTENT_OFFSET,
    WRONG_OFFSET,
    WRONG_PARTITION,
    NONMONOTONIC_READ,
    SKIPPED_READ,
    INCOMPLETE_FINAL_READ,
    REALTIME_ORDER,
    UNKNOWN_READ,
    FAILED_WRITE_READ,
    FUTURE_READ,
    UNCOMMITTED_READ,
    MULTIPLE_LEADERS,
    DIVERGENT_REPLICAS,
    UNAVAILABLE_AFTER_HEAL,
    ABORTED_READ,
    INTERMEDIATE_READ,
    LOST_COMMITTED_WRITE,
    NON_ATOMIC_TRANSACTION,
    TRANSFORM_LOST,
    TRANSFORM_DUPLICATE,
    TRANSFORM_AHEAD,
    OFFSET_REGRESSION,
    HANGING_TRANSACTION,
    LOST_WRITE_ACKS1,
    WRONG_OFFSET_ACKS1,
    DUPLICATE_NON_IDEMPOTENT,
)

# Producer acks values that wait for the whole ISR ("all" and its wire form -1).
SAFE_ACKS = frozenset({"all", "-1"})


@dataclass(frozen=True, slots=True)
class Anomaly:
    """One finding. ``time`` (history seconds) places it on the timeline when known."""

    kind: str
    message: str
    time: float | None = None
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def is_violation(self) -> bool:
        return self.kind not in INFORMATIONAL_KINDS

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "message": self.message, "time": self.time, **self.details}


@dataclass(frozen=True, slots=True)
class Send:
    value: str
    topic: str
    partition: int
    process: str
    type: str  # ok | fail | info
    acks: str
    invoke_time: float
    complete_time: float | None
    offset: int | None = None
    error: str | None = None
    idempotent: bool = True

    @property
    def tp(self) -> TopicPartition:
        return (self.topic, self.partition)

    @property
    def safe(self) -> bool:
        """Acknowledged only once the ISR had it (acks=all): Kafka must never lose it."""
        return self.acks in SAFE_ACKS


@dataclass(frozen=True, slots=True)
class Read:
    topic: str
    partition: int
    offset: int
    value: str | None
    process: str
    time: float  # when the poll (or final read) completed
    final: bool = False
    committed: bool = False  # read with isolation.level read_committed

    @property
    def tp(self) -> TopicPartition:
        return (self.topic, self.partition)


@dataclass(frozen=True, slots=True)
class FinalRead:
    topic: str
    partition: int
    start_offset: int
    high_watermark: int
    reads: tuple[Read, ...]
    time: float
    # read_committed final reads only: the last stable offset the read went up to.
    last_stable_offset: int | None = None

    @property
    def offsets(self) -> list[int]:
        return [r.offset for r in self.reads]

    @property
    def complete(self) -> bool:
        """Every offset of [start_offset, high_watermark) read exactly once, in order."""
        return self.offsets == list(range(self.start_offset, self.high_watermark))


@dataclass(frozen=True, slots=True)
class FaultWindow:
    fault: str
    targets: tuple[Any, ...]
    start: float
    end: float | None  # None: never healed before the history ended
    fault_id: str | None = None


@dataclass(frozen=True, slots=True)
class Bucket:
    """One slice of the timeline: sends invoked and completed in [start, start + width)."""

    start: float
    width: float
    invoked: int
    ok: int
    fail: int
    info: int
    latency_p50_ms: float | None
    latency_p99_ms: float | None
    latency_max_ms: float | None
    in_flight: int = 0  # sends invoked before the bucket's end, still open at its end

    @property
    def throughput_per_s(self) -> float:
        return self.ok / self.width

    @property
    def availability(self) -> float | None:
        """ok / (ok + fail + info) of the sends that completed here; 0 if none completed
        while some were waiting (the cluster answered nothing); None if nothing was tried."""
        total = self.ok + self.fail + self.info
        if total:
            return self.ok / total
        return 0.0 if self.in_flight else None


@dataclass(frozen=True, slots=True)
class Recovery:
    """After a heal that left no fault active: how long until every partition that was
    being written had an acknowledged write again."""

    heal_time: float
    recovered_after_s: float | None  # None: not all partitions recovered
    unrecovered: tuple[TopicPartition, ...] = ()


@dataclass
class CheckResult:
    """What :func:`chaos.checker.check` found. ``anomaly_counts`` counts every anomaly;
    ``anomalies`` keeps at most the checker's per-kind limit of them (the first found)."""

    history_path: str
    ops: dict[str, dict[str, int]]
    anomalies: list[Anomaly]
    anomaly_counts: dict[str, int]
    fault_windows: list[FaultWindow]
    timeline: list[Bucket]
    recoveries: list[Recovery]
    notes: list[str]
    end_time: float
    seed: int | None = None
    checked_partitions: list[TopicPartition] = field(default_factory=list)
    replicas_compared: dict[str, dict[str, int]] = field(default_factory=dict)
    # chaos.checker.txn_timeline.TxnSpan per transaction, by begin time.
    transactions: list[Any] = field(default_factory=list)

    @property
    def violations(self) -> list[Anomaly]:
        return [a for a in self.anomalies if a.is_violation]

    @property
    def violation_count(self) -> int:
        return sum(n for kind, n in self.anomaly_counts.items() if kind not in INFORMATIONAL_KINDS)

    @property
    def valid(self) -> bool:
        """No safety violation and no liveness failure."""
        return self.violation_count == 0

    def summary(self) -> dict[str, Any]:
        sends = self.ops.get("send", {})
        return {
            "valid": self.valid,
            "history": self.history_path,
            "seed": self.seed,
            "duration_s": round(self.end_time, 3),
            "ops": self.ops,
            "sends": {
                "ok": sends.get("ok", 0),
                "failed": sends.get("fail", 0),
                "unknown": sends.get("info", 0),
            },
            "transactions": {
                outcome: sum(1 for s in self.transactions if s.outcome == outcome)
                for outcome in ("committed", "aborted", "unknown")
            },
            "anomalies": self.anomaly_counts,
            "violations": self.violation_count,
            "faults": len(self.fault_windows),
            "recoveries": [asdict(r) for r in self.recoveries],
            "checked_partitions": [list(tp) for tp in self.checked_partitions],
            "replicas_compared": self.replicas_compared,
            "notes": self.notes,
        }
