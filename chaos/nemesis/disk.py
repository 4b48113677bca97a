"""Disk nemeses.

``disk-corruption``: kill -9 one broker, then damage the tail of the active segment of one of
its partitions (``truncate``: cut the last bytes, as if the page cache never reached the disk;
``corrupt``: overwrite bytes near the end, a torn write), and restart it on heal. Recovery
must find the damage by CRC, truncate the log there and fetch the rest from the leader. Only
one broker at a time: the other replicas hold the acknowledged data (Kafka's durability comes
from replication, not from fsync; damaging every replica at once is out of its model).

``full-disk``: fill the broker's log directory, a small tmpfs (the chaos cluster mounts one on
the last broker), until ENOSPC; the heal frees it. A broker that died meanwhile is restarted
by the heal and the history records that it had crashed (a crash is a finding: the broker
must answer errors, not exit).
"""

from __future__ import annotations

import os
from pathlib import Path

from chaos.nemesis.base import ActiveFault, Nemesis, NemesisContext, NoTargetError

# At most this many bytes are cut from or overwritten near a segment's end.
MAX_DAMAGE_BYTES = 4096
# The filler never writes more than this, whatever the tmpfs size.
MAX_FILL_BYTES = 1024 * 1024 * 1024


def active_segment(partition_dir: Path) -> Path | None:
    """The segment with the highest base offset (file names are zero-padded base offsets)."""
    logs = sorted(partition_dir.glob("*.log"))
    return logs[-1] if logs else None


def damage_tail(segment: Path, mode: str, damage_bytes: int, seed: int) -> dict[str, int]:
    """Truncate or corrupt the last ``damage_bytes`` of ``segment``; returns what was done."""
    size = segment.stat().st_size
    n = min(damage_bytes, size)
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
        candidates = [b for b in ctx.live_brokers()]
        if not candidates:
            raise NoTargetError("no running broker")
        broker = ctx.rng.choice(sorted(candidates))
        part = ctx.rng.choice(sorted(ctx.partitions()))
        part_dir = Path(local.node(broker).data_dir) / f"{ctx.topic}-{part}"
        local.kill(broker)
        segment = active_segment(part_dir)
        mode = ctx.rng.choice(("truncate", "corrupt"))
        detail: dict[str, object] = {"mode": mode, "partition": part}
        if segment is not None and segment.stat().st_size > 0:
            n = ctx.rng.randint(1, MAX_DAMAGE_BYTES)
            detail["segment"] = segment.name
            detail.update(damage_tail(segment, mode, n, ctx.rng.randrange(1 << 30)))

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
        written = cluster.fill_disk(broker, MAX_FILL_BYTES)
        detail: dict[str, object] = {"filler_bytes": written}

        def heal() -> None:
            cluster.free_disk(broker)
            if not local.is_running(broker):
                detail["crashed"] = True
                local.start_node(broker)

        return ActiveFault("full-disk", [broker], heal, detail)
