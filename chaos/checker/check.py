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
    liveness, recoveries, liveness_notes = check_liveness(views, liveness_window_s)
    found += liveness
    notes += liveness_notes
    replicas_compared: dict[str, dict[str, int]] = {}
    if replicas is not None:
        comparison = compare_replica_logs(
            replicas,
            {tp: f.high_watermark for tp, f in views.finals.items()},
            isr=isr,
            finals=views.finals,
        )
        found += comparison.anomalies
        replicas_compared = {f"{t}/{p}": v for (t, p), v in comparison.compared.items()}
    if unchecked:
        notes.append(
            f"{unchecked} acknowledged send(s) in partitions without a final read and beyond "
            "every read offset: loss not decidable"
        )
    if not any(s.type == "ok" for s in views.sends.values()):
        notes.append("no send was acknowledged: the safety checks had nothing to hold")
    written = {s.tp for s in views.sends.values()}
    unread = sorted(written - set(views.finals))
    if unread:
        notes.append("no successful final read of " + ", ".join(f"{t}/{p}" for t, p in unread))
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
        checked_partitions=sorted(views.finals),
        replicas_compared=replicas_compared,
    )
