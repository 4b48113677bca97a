"""Byte comparison of replica logs up to the high watermark (``divergent-replicas``).

Followers copy the leader's batches verbatim (base offset and partition leader epoch are
stamped by the leader; the on-disk format is the wire format), so every in-sync replica of a
partition must hold byte-identical batches for all offsets below the high watermark. This
module reads the segment files of each replica directly
(``<log.dir>/<topic>-<partition>/<base offset>.log``, RecordBatch v2 back to back; see
data_plane.storage.file_records), never through a Log, so checking a stopped cluster's
directories changes nothing in them.

For each partition, the replicas compared are those given in ``isr`` (all replicas holding a
directory for it when ``isr`` is None). Findings:

- a replica lacks committed data: its batches below the HW end early, or it has no
  directory although it is in the ISR;
- the first batch where a replica's bytes (or batch framing) differ from the reference
  replica's (the lowest node id);
- when final reads are given: a value at an offset below the HW that differs from what the
  final read returned (``inconsistent-offset``, source ``replica``).

Only batches that lie wholly below the HW are compared (a batch straddling the HW may be
partly uncommitted). Thread-safety: pure reads of files; call from any thread.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

from chaos.checker.model import DIVERGENT_REPLICAS, INCONSISTENT_OFFSET, Anomaly, FinalRead
from common.errors import CorruptRecordError, InvalidRecordError
from common.record_batch import iter_batch_headers
from common.topic_partition import TopicPartition
from data_plane.storage.log_loader import partition_dir_name
from data_plane.storage.record_codec import decode_records

ReplicaId = int | str
# Largest segment file the comparison reads into memory at once.
MAX_SEGMENT_READ_BYTES = 1 << 30


@dataclass(frozen=True, slots=True)
class StoredBatch:
    base_offset: int
    last_offset: int
    data: bytes


@dataclass
class ReplicaLog:
    """The batches of one replica of one partition below a bound, in offset order."""

    replica: ReplicaId
    path: str
    batches: list[StoredBatch] = field(default_factory=list)
    # The next offset after the data read: the end of ``batches``, or past the HW when the
    # batch after them straddles it. None for an empty log.
    reach: int | None = None
    error: str | None = None  # set when a segment could not be read to the end

    @property
    def first_offset(self) -> int | None:
        return self.batches[0].base_offset if self.batches else None


def read_replica_log(replica: ReplicaId, partition_dir: str, high_watermark: int) -> ReplicaLog:
    """The batches of ``partition_dir`` that lie wholly below ``high_watermark``."""
    log = ReplicaLog(replica, partition_dir)
    names = sorted(n for n in os.listdir(partition_dir) if n.endswith(".log") and n[:-4].isdigit())
    for name in names:
        path = os.path.join(partition_dir, name)
        if os.path.getsize(path) > MAX_SEGMENT_READ_BYTES:
            log.error = f"{path} is over {MAX_SEGMENT_READ_BYTES} bytes; not compared"
            return log
        with open(path, "rb") as f:
            data = f.read()
        try:
            for header in iter_batch_headers(data, allow_partial_tail=True):
                if log.reach is None or header.base_offset == log.reach:
                    log.reach = header.last_offset + 1
                if header.last_offset >= high_watermark:
                    return log
                start = header.position
                log.batches.append(
                    StoredBatch(
                        header.base_offset,
                        header.last_offset,
                        data[start : start + header.size_in_bytes],
                    )
                )
        except CorruptRecordError as e:
            log.error = f"{path}: {e}"
            return log
    return log


def _partition_dirs(dirs: str | Sequence[str], tp: TopicPartition) -> list[str]:
    roots = [dirs] if isinstance(dirs, str) else list(dirs)
    name = partition_dir_name(*tp)
    return [os.path.join(root, name) for root in roots if os.path.isdir(os.path.join(root, name))]


@dataclass
class ReplicaComparison:
    anomalies: list[Anomaly] = field(default_factory=list)
    # Per partition: replicas compared and how many batches / bytes each matched.
    compared: dict[TopicPartition, dict[str, int]] = field(default_factory=dict)


def compare_replica_logs(
    log_dirs: Mapping[ReplicaId, str | Sequence[str]],
    high_watermarks: Mapping[TopicPartition, int],
    *,
    isr: Mapping[TopicPartition, Collection[ReplicaId]] | None = None,
    finals: Mapping[TopicPartition, FinalRead] | None = None,
) -> ReplicaComparison:
    """Compare the replicas of every partition in ``high_watermarks`` (``log_dirs``: replica
    id -> its ``log.dirs``)."""
    result = ReplicaComparison()
    for tp, hw in sorted(high_watermarks.items()):
        members = sorted(log_dirs, key=str) if isr is None else sorted(isr.get(tp, ()), key=str)
        logs: list[ReplicaLog] = []
        for replica in members:
            dirs = _partition_dirs(log_dirs.get(replica, ()), tp)
            if not dirs:
                if isr is not None and hw > 0:
                    result.anomalies.append(_missing(tp, replica, hw, "has no directory"))
                continue
            logs.append(read_replica_log(replica, dirs[0], hw))
        result.anomalies.extend(_compare(tp, hw, logs))
        if logs and finals is not None and tp in finals:
            result.anomalies.extend(_against_final(tp, logs[0], finals[tp]))
        result.compared[tp] = {
            "replicas": len(logs),
            "batches": min((len(lg.batches) for lg in logs), default=0),
            "bytes": min((sum(len(b.data) for b in lg.batches) for lg in logs), default=0),
        }
    return result


def _missing(tp: TopicPartition, replica: ReplicaId, hw: int, what: str) -> Anomaly:
    return Anomaly(
        DIVERGENT_REPLICAS,
        f"replica {replica} of {tp[0]}/{tp[1]} {what} (high watermark {hw})",
        None,
        {"partition": list(tp), "replica": str(replica), "high_watermark": hw},
    )


def _compare(tp: TopicPartition, hw: int, logs: list[ReplicaLog]) -> list[Anomaly]:
    out: list[Anomaly] = []
    for lg in logs:
        if lg.error is not None:
            out.append(_missing(tp, lg.replica, hw, f"cannot be read below the HW: {lg.error}"))
        elif hw > 0 and (lg.reach is None or lg.reach < hw):
            out.append(_missing(tp, lg.replica, hw, f"holds offsets only below {lg.reach or 0}"))
    if len(logs) < 2:
        return out
    common_start = max((lg.first_offset or 0) for lg in logs)
    reference = logs[0]
    ref = [b for b in reference.batches if b.base_offset >= common_start]
    for other in logs[1:]:
        mine = [b for b in other.batches if b.base_offset >= common_start]
        for a, b in zip(ref, mine, strict=False):
            if a.base_offset != b.base_offset or a.last_offset != b.last_offset:
                what = (
                    f"batch framing differs at offset {min(a.base_offset, b.base_offset)}: "
                    f"replica {reference.replica} has {a.base_offset}..{a.last_offset}, "
                    f"replica {other.replica} has {b.base_offset}..{b.last_offset}"
                )
            elif a.data != b.data:
                what = (
                    f"batch {a.base_offset}..{a.last_offset} differs in its bytes between "
                    f"replicas {reference.replica} and {other.replica}"
                )
            else:
                continue
            out.append(
                Anomaly(
                    DIVERGENT_REPLICAS,
                    f"{tp[0]}/{tp[1]}: {what} (high watermark {hw})",
                    None,
                    {
                        "partition": list(tp),
                        "replicas": [str(reference.replica), str(other.replica)],
                        "offset": min(a.base_offset, b.base_offset),
                    },
                )
            )
            break
    return out


def _against_final(tp: TopicPartition, log: ReplicaLog, final: FinalRead) -> list[Anomaly]:
    read = {r.offset: r.value for r in final.reads}
    for batch in log.batches:
        try:
            header, records = decode_records(batch.data)
        except (CorruptRecordError, InvalidRecordError) as e:
            return [_missing(tp, log.replica, final.high_watermark, f"has a bad batch: {e}")]
        if header.is_control:
            continue
        for rec in records:
            if rec.offset not in read:
                continue
            stored = rec.value.decode("utf-8", "replace") if rec.value is not None else None
            if stored != read[rec.offset]:
                return [
                    Anomaly(
                        INCONSISTENT_OFFSET,
                        f"{tp[0]}/{tp[1]}@{rec.offset}: replica {log.replica} stores "
                        f"{stored!r}, the final read returned {read[rec.offset]!r}",
                        final.time,
                        {
                            "position": [tp[0], tp[1], rec.offset],
                            "source": "replica",
                            "replica": str(log.replica),
                            "stored": stored,
                            "read": read[rec.offset],
                        },
                    )
                ]
    return []
