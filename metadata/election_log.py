"""One INFO line for a set of partition changes the controller proposes: which leaders they
move (``topic-partition old->new``, the first :data:`LOGGED_PARTITIONS`, then a count) and
how many change only the ISR or the replicas. Operators read these to know why leadership
moved: a fence (session expired, controlled shutdown), an unfence, ElectLeaders,
preferred-leader rebalancing, recovery of a leaderless partition, reassignments.

The changes are proposals: a controller that loses its leadership before they commit has
logged changes that never happened (the next controller logs its own).

Thread-safety: pure apart from logging.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from metadata.image import MetadataImage
from metadata.records import NO_LEADER_CHANGE, MetadataRecord, PartitionChangeRecord

logger = logging.getLogger("metadata.elections")

# Partitions named in one line (the rest are counted).
LOGGED_PARTITIONS = 10


def log_leader_moves(image: MetadataImage, what: str, changes: Iterable[MetadataRecord]) -> None:
    moves = []
    isr_only = 0
    for r in changes:
        if not isinstance(r, PartitionChangeRecord):
            continue
        if r.leader == NO_LEADER_CHANGE:
            isr_only += 1
            continue
        topic = image.topics_by_id.get(r.topic_id)
        reg = topic.partitions.get(r.partition_id) if topic is not None else None
        name = f"{topic.name if topic else r.topic_id}-{r.partition_id}"
        old = reg.leader if reg is not None else -1
        moves.append(f"{name} {old}->{r.leader}")
    shown = ", ".join(moves[:LOGGED_PARTITIONS])
    more = f" and {len(moves) - LOGGED_PARTITIONS} more" if len(moves) > LOGGED_PARTITIONS else ""
    logger.info(
        "%s: %d leader election(s)%s%s, %d other partition change(s) (ISR or replicas, "
        "same leader)",
        what,
        len(moves),
        f": {shown}" if moves else "",
        more,
        isr_only,
    )
