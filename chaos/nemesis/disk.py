"""Disk nemeses.

``disk-corruption``: kill -9 one broker, then damage the unflushed tail of the active segment
of one of its partitions (``truncate``: cut bytes off the end, as if the page cache never
reached the disk; ``corrupt``: overwrite bytes near the end, a torn write), and restart it on
heal. "Unflushed" = at or after the partition's recovery point (the
``recovery-point-offset-checkpoint`` file: everything below it was fsynced, and recovery
after an unclean shutdown trusts it and scans only from there, as Kafka's does). Damage below
the recovery point would be corruption of durable data, outside the storage model. Recovery
must find the damage by CRC, truncate the log there and fetch the rest from the leader. Only
one broker at a time: another replica holds the acknowledged data (Kafka's durability comes
from replication, not from fsync) — another ISR member, or, when the damaged broker is the
last ISR member (after a crash of every node fenced the others out of the ISR), the eligible
leader replicas (KIP-966, metadata.election): the controller no longer elects a replica that
restarted after an unclean shutdown while another candidate may hold more. Before that fix,
seeds 2 and 5 of the first campaign lost acknowledged records exactly so (docs/chaos.md).

``full-disk``: fill the broker's log directory, a small tmpfs (the chaos cluster mounts one on
the last broker), until ENOSPC; the heal frees it. The broker takes the directory offline at
its first failed write (storage/log_dir_failure.py); it is the broker's only one, so the broker
then stops in order with exit code 74, as Kafka halts a broker whose every log directory
failed, after the controller moved its leaderships. The heal restarts a broker that is not
running and records ``crashed`` in the fault's detail.
"""

from __future__ import annotations

import os
from pathlib import Path

from chaos.nemesis.base import ActiveFault, Nemesis, NemesisContext, NoTargetError
from data_plane.storage.checkpoints import RECOVERY_POINT_CHECKPOINT, parse_checkpoint

# At most this many bytes are cut from or overwritten near a segment's end.
MAX_DAMAGE_BYTES = 4096
# The filler never writes more than this, whatever the tmpfs size.
MAX_FILL_BYTES = 1024 * 1024 * 1024
# RecordBatch framing: baseOffset int64 + batchLength int32 precede every batch's body.
_LOG_OVERHEAD_BYTES = 12


def active_segment(partition_dir: Path) -> Path | None:
    """The segment with the highest base offset (file names are zero-padded base offsets)."""
    logs = sorted(partition_dir.glob("*.log"))
    return logs[-1] if logs else None


def recovery_point(log_dir: Path, topic: str, partition: int) -> int:
    """The partition's recovery point (0 when the checkpoint has no entry or is missing)."""
    path = log_dir / RECOVERY_POINT_CHECKPOINT
    try:
        points = parse_checkpoint(path.read_text(encoding="utf-8"), str(path))
    except FileNotFoundError:
        return 0
    return points.get((topic, partition), 0)


def unflushed_position(segment: Path, from_offset: int) -> int:
    """The file position of the first batch of ``segment`` whose base offset is at or above
    ``from_offset`` (the segment's size when there is none): where unflushed data begins."""
    data = segment.read_bytes()
    pos = 0
    while pos + _LOG_OVERHEAD_BYTES <= len(data):
        base_offset = int.from_bytes(data[pos : pos + 8], "big", signed=True)
        length = int.from_bytes(data[pos + 8 : pos + 12], "big", signed=True)
        if base_offset >= from_offset or length <= 0:
            return pos
        pos += _LOG_OVERHEAD_BYTES + length
    return min(pos, len(data))


def damage_tail(
    segment: Path, mode: str, damage_bytes: int, seed: int, floor_position: int = 0
) -> dict[str, int]:
    """Truncate or corrupt the last ``damage_bytes`` of ``segment``, never before
    ``floor_position``; returns what was done."""
    size = segment.stat().st_size
    n = max(0, min(damage_bytes, size - floor_position))
    if mode == "truncate":
        os.truncate(segment, size - n)
        return {"size_before": size, "bytes_cut": n}
    if mode == "corrupt":
        garbage = bytes((seed * 31 + i * 17 + 1) % 256 for i in range(n))
        with open(segment, "r+b") as f:
            f.seek(size - n)
            f.write(garbage)
        return {"size_before": size, "bytes_overwritten": n}
    raise ValueError(f"unknown damage mode {mode!r}")


class DiskCorruptionNemesis(Nemesis):
    name = "disk-corruption"

    def start(self, ctx: NemesisContext) -> ActiveFault:
        local = ctx.local
        candidates = sorted(ctx.live_brokers())
        if not candidates:
            raise NoTargetError("no running broker")
        broker = ctx.rng.choice(candidates)
        part = ctx.rng.choice(sorted(ctx.partitions()))
        part_dir = Path(local.node(broker).data_dir) / f"{ctx.topic}-{part}"
        ctx.begin("disk-corruption", [broker], {"partition": part})
        local.kill(broker)
        segment = active_segment(part_dir)
        mode = ctx.rng.choice(("truncate", "corrupt"))
        detail: dict[str, object] = {"mode": mode, "partition": part}
        if segment is not None:
            point = recovery_point(part_dir.parent, ctx.topic, part)
            floor = unflushed_position(segment, point)
            n = ctx.rng.randint(1, MAX_DAMAGE_BYTES)
            detail.update(segment=segment.name, recovery_point=point, unflushed_from=floor)
            detail.update(damage_tail(segment, mode, n, ctx.rng.randrange(1 << 30), floor))

        def heal() -> None:
            if not local.is_running(broker):
                local.start_node(broker)

        return ActiveFault("disk-corruption", [broker], heal, detail)


class FullDiskNemesis(Nemesis):
    name = "full-disk"

    def start(self, ctx: NemesisContext) -> ActiveFault:
        cluster = ctx.cluster
        if not cluster.tmpfs_dirs:
            raise NoTargetError("no broker has a tmpfs log directory")
        local = ctx.local
        broker = local.broker_ids[-1]
        if not local.is_running(broker):
            raise NoTargetError(f"broker {broker} is not running")
        ctx.begin("full-disk", [broker])
        written = cluster.fill_disk(broker, MAX_FILL_BYTES)
        detail: dict[str, object] = {"filler_bytes": written}

        def heal() -> None:
            cluster.free_disk(broker)
            if not local.is_running(broker):
                detail["crashed"] = True
                local.start_node(broker)

        return ActiveFault("full-disk", [broker], heal, detail)
