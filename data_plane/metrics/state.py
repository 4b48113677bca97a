"""State metrics derived from metadata images and the controller, computed on the node's own
threads (never by the scrape).

:class:`BrokerStateMetrics` is fed every new image a broker applies (its housekeeping tick):
it sets the leader / under-replicated / offline partition gauges and the metadata offset, and
counts ISR shrinks and expansions of the partitions this broker leads by comparing each
partition's ISR with the previous image's (the ISR of a partition only changes through
committed AlterPartition records, so this counts exactly the committed changes; Kafka's
IsrShrinksPerSec / IsrExpandsPerSec).

Thread-safety: ``on_image`` is called from one thread; the metrics are thread-safe.
"""

from __future__ import annotations

from data_plane.metrics.names import NodeMetrics
from metadata.image import MetadataImage, PartitionRegistration

NO_LEADER = -1


class BrokerStateMetrics:
    def __init__(self, metrics: NodeMetrics, broker_id: int) -> None:
        self.metrics = metrics
        self.broker_id = broker_id
        self._image: MetadataImage | None = None
        self._led: dict[tuple[str, int], PartitionRegistration] = {}

    def on_image(self, image: MetadataImage, committed_offset: int | None = None) -> None:
        """Update the gauges from ``image`` (cheap when it is the image seen last time)."""
        if image is self._image:
            return
        self._image = image
        led: dict[tuple[str, int], PartitionRegistration] = {}
        under = offline = 0
        shrinks = expands = 0
        for topic, pid, reg in image.iter_partitions():
            if reg.leader == NO_LEADER:
                offline += 1
            if reg.leader != self.broker_id:
                continue
            key = (topic.name, pid)
            led[key] = reg
            if len(reg.isr) < len(reg.replicas):
                under += 1
            prev = self._led.get(key)
            if prev is not None and prev is not reg and prev.isr != reg.isr:
                if set(reg.isr) < set(prev.isr):
                    shrinks += 1
                elif set(reg.isr) > set(prev.isr):
                    expands += 1
        self._led = led
        m = self.metrics
        m.leader_partitions.set(len(led))
        m.under_replicated_partitions.set(under)
        m.offline_partitions.set(offline)
        m.metadata_offset.set(image.offset)
        if committed_offset is not None:
            m.metadata_offset_lag.set(max(0, committed_offset - image.offset))
        if shrinks:
            m.isr_shrinks.inc(shrinks)
        if expands:
            m.isr_expands.inc(expands)
