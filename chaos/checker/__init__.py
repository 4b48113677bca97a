"""The chaos checker: every safety and liveness property (docs/chaos.md) over a recorded history, a
byte comparison of replica logs, the availability timeline, and the report.

    from chaos.checker import check, write_report
    result = check("artifacts/history.jsonl", replicas={1: "/data/b1", 2: "/data/b2"})
    write_report(result, "artifacts")      # anomalies.json, summary.json, report.html, seed
    sys.exit(0 if result.valid else 1)

Modules: model (kinds and result types), views (history -> sends/reads/consumers/faults),
properties (one function per property), replicas (segment byte comparison), timeline
(availability, throughput, latency buckets), check (the entry point); report renders the artifact
folder.
"""

from chaos.checker.check import check, check_history
from chaos.checker.model import (
    ALL_KINDS,
    INFORMATIONAL_KINDS,
    Anomaly,
    CheckResult,
    FaultWindow,
    Recovery,
)
from chaos.checker.replicas import ReplicaComparison, compare_replica_logs
from chaos.checker.report import write_report

__all__ = [
    "ALL_KINDS",
    "INFORMATIONAL_KINDS",
    "Anomaly",
    "CheckResult",
    "FaultWindow",
    "Recovery",
    "ReplicaComparison",
    "check",
    "check_history",
    "compare_replica_logs",
    "write_report",
]
