"""Replica placement for new topics and partitions (Kafka's ``AdminUtils.assignReplicasToBrokers``).

Rack-unaware (no broker has a rack, or only some do): brokers sorted by id; a start index and
a replica shift are drawn at random (or fixed, see below). Partition ``p`` gets its first
replica at ``(p + start) % n``; the shift grows by one each time ``p`` wraps around the broker
list, and replica ``j`` (j >= 1) sits ``1 + (shift + j - 1) % (n - 1)`` places after the first.
So leaders spread round-robin and followers of consecutive leaders land on different brokers.

Rack-aware (every candidate broker has a rack): the broker list is first re-ordered to alternate
racks (rack a's first broker, rack b's first, rack c's first, rack a's second, ...; racks and
brokers within a rack in sorted order). Leaders go round-robin over that list as above; each
follower is the next broker (walking with the shifted stride) whose rack holds no replica yet
(unless every rack already has one) and that holds no replica yet (unless all do).

Adding partitions to an existing topic uses a fixed start index and shift: the position of the
existing partition 0's first replica, as Kafka does, so growth continues the same pattern.

Pure functions; the random source is injected.
"""

from __future__ import annotations

import random
from collections.abc import Mapping


class PlacementError(ValueError):
    """Not enough brokers for the requested replication factor."""


def assign_replicas(
    brokers: Mapping[int, str | None],
    num_partitions: int,
    replication_factor: int,
    rng: random.Random,
    *,
    fixed_start_index: int = -1,
    start_partition_id: int = 0,
) -> dict[int, list[int]]:
    """Partition id -> replica list (preferred leader first) for partitions
    ``start_partition_id .. start_partition_id + num_partitions - 1``.

    ``brokers`` maps each eligible broker id to its rack (or None).
    """
    if replication_factor <= 0:
        raise PlacementError("replication factor must be larger than 0")
    if replication_factor > len(brokers):
        raise PlacementError(
            f"replication factor: {replication_factor} larger than available brokers: "
            f"{len(brokers)}"
        )
    if num_partitions < 0:
        raise PlacementError("number of partitions must not be negative")
    racks = list(brokers.values())
    if all(r is not None for r in racks) and racks:
        return _rack_aware(
            brokers, num_partitions, replication_factor, rng, fixed_start_index, start_partition_id
        )
    return _rack_unaware(
        sorted(brokers),
        num_partitions,
        replication_factor,
        rng,
        fixed_start_index,
        start_partition_id,
    )


def _replica_index(first: int, shift: int, j: int, n: int) -> int:
    return (first + 1 + (shift + j) % (n - 1)) % n


def _rack_unaware(
    broker_list: list[int],
    num_partitions: int,
    rf: int,
    rng: random.Random,
    fixed_start_index: int,
    start_partition_id: int,
) -> dict[int, list[int]]:
    n = len(broker_list)
    start = fixed_start_index if fixed_start_index >= 0 else rng.randrange(n)
    shift = fixed_start_index if fixed_start_index >= 0 else rng.randrange(n)
    out: dict[int, list[int]] = {}
    pid = max(0, start_partition_id)
    for _ in range(num_partitions):
        if pid > 0 and pid % n == 0:
            shift += 1
        first = (pid + start) % n
        replicas = [broker_list[first]]
        replicas.extend(broker_list[_replica_index(first, shift, j, n)] for j in range(rf - 1))
        out[pid] = replicas
        pid += 1
    return out


def rack_alternated_brokers(brokers: Mapping[int, str | None]) -> list[int]:
    """Brokers ordered so that consecutive entries alternate racks (see module docstring)."""
    by_rack: dict[str, list[int]] = {}
    for bid, rack in brokers.items():
        by_rack.setdefault(str(rack), []).append(bid)
    queues = [sorted(by_rack[r]) for r in sorted(by_rack)]
    out: list[int] = []
    index = 0
    while len(out) < len(brokers):
        queue = queues[index % len(queues)]
        if queue:
            out.append(queue.pop(0))
        index += 1
    return out


def _rack_aware(
    brokers: Mapping[int, str | None],
    num_partitions: int,
    rf: int,
    rng: random.Random,
    fixed_start_index: int,
    start_partition_id: int,
) -> dict[int, list[int]]:
    arranged = rack_alternated_brokers(brokers)
    n = len(arranged)
    num_racks = len({brokers[b] for b in arranged})
    start = fixed_start_index if fixed_start_index >= 0 else rng.randrange(n)
    shift = fixed_start_index if fixed_start_index >= 0 else rng.randrange(n)
    out: dict[int, list[int]] = {}
    pid = max(0, start_partition_id)
    for _ in range(num_partitions):
        if pid > 0 and pid % n == 0:
            shift += 1
        first = (pid + start) % n
        leader = arranged[first]
        replicas = [leader]
        racks_used = {brokers[leader]}
        brokers_used = {leader}
        k = 0
        for _ in range(rf - 1):
            # Bounded: within n consecutive k the stride visits every broker (n-1 offsets).
            for _attempt in range(n * n + 1):
                b = arranged[_replica_index(first, shift * num_racks, k, n)] if n > 1 else leader
                k += 1
                rack = brokers[b]
                if (rack not in racks_used or len(racks_used) == num_racks) and (
                    b not in brokers_used or len(brokers_used) == n
                ):
                    replicas.append(b)
                    racks_used.add(rack)
                    brokers_used.add(b)
                    break
            else:
                raise PlacementError("rack-aware placement found no broker (internal error)")
        out[pid] = replicas
        pid += 1
    return out
