"""``check``: read a history, run every property, compare replicas, build the timeline.

Entry points: :func:`check` (a history file) and :func:`check_history` (operations in
memory, for tests and tools). Both return a :class:`CheckResult`; ``result.valid`` is False
if any safety or liveness property failed. Nothing here raises for a violation: findings
are data. A malformed history raises :class:`chaos.history.HistoryFormatError`.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterable, Mapping, Sequence

from chaos.checker.model import Anomaly, CheckResult
from chaos.checker.properties import (
    ReadIndex,
    check_acknowledged,
    check_consumers,
    check_leaders,
    check_liveness,
    check_reads,
    check_realtime_order,
    check_uncommitted,
)
from chaos.checker.replicas import ReplicaId, compare_replica_logs
from chaos.checker.timeline import build_timeline
from chaos.checker.txn_properties import (
    check_offsets,
    check_transform,
    check_txn_consumers,
    check_txn_reads,
    check_txn_writes,
    txn_write_attempts,
)
from chaos.checker.txn_timeline import build_txn_spans
from chaos.checker.views import build_views
from chaos.history import Op, read_history
from common.topic_partition import TopicPartition

# The acceptance bar: writes succeed again within 30 s of every heal.
DEFAULT_LIVENESS_WINDOW_S = 30.0
DEFAULT_BUCKET_S = 1.0
# Anomalies kept per kind (all are counted): one bug can produce thousands of the same.
DEFAULT_MAX_ANOMALIES_PER_KIND = 1000


def check(
    history_path: str | os.PathLike[str],
    *,
    replicas: Mapping[ReplicaId, str | Sequence[str]] | None = None,
    isr: Mapping[TopicPartition, Collection[ReplicaId]] | None = None,
    liveness_window_s: float = DEFAULT_LIVENESS_WINDOW_S,
    bucket_s: float = DEFAULT_BUCKET_S,
    seed: int | None = None,
    max_anomalies_per_kind: int = DEFAULT_MAX_ANOMALIES_PER_KIND,
) -> CheckResult:
    """Check the history at ``history_path``.

    ``replicas`` maps each broker id to its ``log.dirs`` (a path or a list of paths): the
    replica logs of every partition with a final read are then compared byte for byte up to
    its high watermark; ``isr`` restricts each partition's comparison to its in-sync replicas
    (recommended: a replica outside the ISR may legitimately lag or hold a stale tail).
    ``seed`` is only recorded in the result.
    """
    return check_history(
        read_history(history_path),
        history_path=os.fspath(history_path),
        replicas=replicas,
        isr=isr,
        liveness_window_s=liveness_window_s,
        bucket_s=bucket_s,
        seed=seed,
        max_anomalies_per_kind=max_anomalies_per_kind,
    )


def check_history(
    ops: Iterable[Op],
    *,
    history_path: str = "",
    replicas: Mapping[ReplicaId, str | Sequence[str]] | None = None,
    isr: Mapping[TopicPartition, Collection[ReplicaId]] | None = None,
    liveness_window_s: float = DEFAULT_LIVENESS_WINDOW_S,
    bucket_s: float = DEFAULT_BUCKET_S,
    seed: int | None = None,
    max_anomalies_per_kind: int = DEFAULT_MAX_ANOMALIES_PER_KIND,
) -> CheckResult:
    views = build_views(ops)
    index = ReadIndex(views.reads)
    found: list[Anomaly] = []
    notes: list[str] = []
    found += check_reads(views, index)
    acked, unchecked = check_acknowledged(views, index)
    found += acked
    found += check_consumers(views)
    found += check_realtime_order(views)
    found += check_uncommitted(views)
    found += check_leaders(views)
    found += check_txn_reads(views.txn)
    found += check_txn_writes(views.txn)
    found += check_txn_consumers(views)
    found += check_offsets(views.txn)
    transform, transform_notes = check_transform(views.txn)
    found += transform
    notes += transform_notes
    liveness, recoveries, liveness_notes = check_liveness(
        views, liveness_window_s, txn_write_attempts(views.txn)
    )
    found += liveness
    notes += liveness_notes
    replicas_compared: dict[str, dict[str, int]] = {}
    if replicas is not None:
        finals = {
            **views.finals,
            **{tp: f for (tp, committed), f in views.txn.finals.items() if not committed},
        }
        comparison = compare_replica_logs(
            replicas,
            {tp: f.high_watermark for tp, f in finals.items()},
            isr=isr,
            finals=finals,
        )
        found += comparison.anomalies
        replicas_compared = {f"{t}/{p}": v for (t, p), v in comparison.compared.items()}
    if unchecked:
        notes.append(
            f"{unchecked} acknowledged send(s) in partitions without a final read and beyond "
            "every read offset: loss not decidable"
        )
    if not any(s.type == "ok" for s in views.sends.values()) and not any(
        t.committed for t in views.txn.txns.values()
    ):
        notes.append("no write was acknowledged: the safety checks had nothing to hold")
    written = {s.tp for s in views.sends.values()}
    written_txn = {tp for t in views.txn.txns.values() for tp, _v in t.writes}
    unread = sorted(written - set(views.finals)) + sorted(
        tp for tp in written_txn if views.txn.committed_final(tp) is None
    )
    if unread:
        notes.append("no successful final read of " + ", ".join(f"{t}/{p}" for t, p in unread))
    if views.txn.duplicate_writes:
        notes.append(
            f"{len(views.txn.duplicate_writes)} transactional write(s) reused a value (workload "
            "bug); only the first writer of each value is checked"
        )
    if views.duplicate_sends:
        notes.append(
            f"{len(views.duplicate_sends)} send(s) reused a value already sent (workload bug); "
            "only the first send of each value is checked"
        )
    counts: dict[str, int] = {}
    kept: list[Anomaly] = []
    for anomaly in found:
        n = counts.get(anomaly.kind, 0)
        counts[anomaly.kind] = n + 1
        if n < max_anomalies_per_kind:
            kept.append(anomaly)
    for kind, n in counts.items():
        if n > max_anomalies_per_kind:
            notes.append(f"{kind}: {n} found, the first {max_anomalies_per_kind} kept")
    kept.sort(key=lambda a: (a.time if a.time is not None else float("inf"), a.kind))
    return CheckResult(
        history_path=history_path,
        ops=views.ops,
        anomalies=kept,
        anomaly_counts=dict(sorted(counts.items())),
        fault_windows=views.fault_windows,
        timeline=build_timeline(views.sends.values(), views.end_time, bucket_s),
        recoveries=recoveries,
        notes=notes,
        end_time=views.end_time,
        seed=seed,
        checked_partitions=sorted(set(views.finals) | {tp for tp, _c in views.txn.finals}),
        replicas_compared=replicas_compared,
        transactions=build_txn_spans(views.txn),
    )
