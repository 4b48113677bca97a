"""Replica logs compared byte for byte up to the high watermark, on real segment files."""

from __future__ import annotations

import os

from chaos.checker import compare_replica_logs
from chaos.checker import model as k
from common.log_config import LogConfig
from data_plane.storage.log import Log
from data_plane.storage.record_codec import Record, build_batch
from tests.unit.chaos.history_builder import TOPIC, HistoryBuilder

TP = (TOPIC, 0)
# Small segments, so a replica spans several .log files.
SEGMENT_BYTES = 200


def write_replica(root: str, batches: list[list[str]], *, epoch: int = 1) -> str:
    """A replica of chaos-0 under ``root`` (one log dir) holding ``batches`` of values."""
    log = Log(
        os.path.join(root, f"{TOPIC}-0"),
        LogConfig(segment_bytes=SEGMENT_BYTES),
        topic=TOPIC,
        partition=0,
        clock_ms=lambda: 1_700_000_000_000,
    )
    try:
        for values in batches:
            records = [
                Record(None, v.encode(), 1_700_000_000_000 + i) for i, v in enumerate(values)
            ]
            log.append(build_batch(records), epoch)
    finally:
        log.close()
    return root


BATCHES = [["a", "b"], ["c"], ["d", "e", "f"], ["g"]]  # offsets 0-1, 2, 3-5, 6
HW = 7


def replicas(tmp_path: os.PathLike[str], *variants: list[list[str]]) -> dict[int, str]:
    dirs = {}
    for i, batches in enumerate(variants, start=1):
        dirs[i] = write_replica(os.path.join(os.fspath(tmp_path), f"b{i}"), batches)
    return dirs


def test_identical_replicas(tmp_path: os.PathLike[str]) -> None:
    dirs = replicas(tmp_path, BATCHES, BATCHES, BATCHES)
    assert (
        len([n for n in os.listdir(os.path.join(dirs[1], f"{TOPIC}-0")) if n.endswith(".log")]) > 1
    )
    result = compare_replica_logs(dirs, {TP: HW})
    assert result.anomalies == []
    assert result.compared[TP]["replicas"] == 3
    assert result.compared[TP]["batches"] == len(BATCHES)


def test_a_differing_batch_below_the_high_watermark(tmp_path: os.PathLike[str]) -> None:
    changed = [["a", "b"], ["c"], ["d", "X", "f"], ["g"]]
    dirs = replicas(tmp_path, BATCHES, BATCHES, changed)
    (anomaly,) = compare_replica_logs(dirs, {TP: HW}).anomalies
    assert anomaly.kind == k.DIVERGENT_REPLICAS
    assert anomaly.details["offset"] == 3
    assert anomaly.details["replicas"] == ["1", "3"]


def test_differences_at_or_above_the_high_watermark_are_allowed(
    tmp_path: os.PathLike[str],
) -> None:
    tail = [*BATCHES, ["uncommitted"]]
    other_tail = [*BATCHES, ["other", "tail"]]
    dirs = replicas(tmp_path, tail, other_tail, BATCHES)
    assert compare_replica_logs(dirs, {TP: HW}).anomalies == []


def test_a_replica_missing_committed_data(tmp_path: os.PathLike[str]) -> None:
    dirs = replicas(tmp_path, BATCHES, BATCHES[:2])
    (anomaly,) = compare_replica_logs(dirs, {TP: HW}).anomalies
    assert anomaly.kind == k.DIVERGENT_REPLICAS
    assert anomaly.details["replica"] == "2"
    assert "only below 3" in anomaly.message


def test_only_in_sync_replicas_are_compared(tmp_path: os.PathLike[str]) -> None:
    dirs = replicas(tmp_path, BATCHES, BATCHES[:2], BATCHES)
    assert compare_replica_logs(dirs, {TP: HW}, isr={TP: [1, 3]}).anomalies == []
    # An ISR member without the partition's directory is missing committed data.
    os.makedirs(os.path.join(os.fspath(tmp_path), "b4"))
    dirs[4] = os.path.join(os.fspath(tmp_path), "b4")
    (anomaly,) = compare_replica_logs(dirs, {TP: HW}, isr={TP: [1, 4]}).anomalies
    assert "has no directory" in anomaly.message


def test_a_torn_tail_above_the_high_watermark_is_ignored(tmp_path: os.PathLike[str]) -> None:
    dirs = replicas(tmp_path, [*BATCHES, ["x" * 50]], BATCHES)
    seg_dir = os.path.join(dirs[1], f"{TOPIC}-0")
    last = sorted(n for n in os.listdir(seg_dir) if n.endswith(".log"))[-1]
    path = os.path.join(seg_dir, last)
    os.truncate(path, os.path.getsize(path) - 10)  # crash mid-append of the last batch
    assert compare_replica_logs(dirs, {TP: HW}).anomalies == []


def test_check_compares_replicas_with_the_final_read(tmp_path: os.PathLike[str]) -> None:
    dirs = replicas(tmp_path, BATCHES, BATCHES)
    values = [v for batch in BATCHES for v in batch]
    b = HistoryBuilder(tmp_path)
    for offset, value in enumerate(values):
        b.send(value, 0, offset, 1.0 + offset)
    b.final(0, HW, values, 20.0)
    result = b.check(replicas=dirs)
    assert result.anomaly_counts == {}
    compared = result.replicas_compared[f"{TOPIC}/0"]
    assert (compared["replicas"], compared["batches"]) == (2, len(BATCHES))

    # The replicas agree with each other but not with what consumers were served.
    b2 = HistoryBuilder(tmp_path, name="other.jsonl")
    served = [*values[:4], "Z", *values[5:]]
    for offset, value in enumerate(served):
        b2.send(value, 0, None, 1.0 + offset, outcome="info")
    b2.final(0, HW, served, 20.0)
    result = b2.check(replicas=dirs)
    assert result.anomaly_counts == {k.INCONSISTENT_OFFSET: 1}
    assert result.anomalies[0].details["position"] == [TOPIC, 0, 4]
