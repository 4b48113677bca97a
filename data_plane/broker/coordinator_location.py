"""Where a coordinator key lives: the live leader of the key's partition of a coordinator
topic (``__consumer_offsets`` for a group id, ``__transaction_state`` for a transactional
id), in a metadata image. FindCoordinator answers with it; partition leaders verifying a
transaction ask it. Pure; thread-safe."""

from __future__ import annotations

from data_plane.coordinator.hashing import partition_for
from metadata.image import BrokerRegistration, MetadataImage


def coordinator_broker(image: MetadataImage, topic: str, key: str) -> BrokerRegistration | None:
    """The registration of the broker leading ``key``'s partition of ``topic``; None when the
    topic does not exist or that partition has no unfenced leader."""
    t = image.topic(topic)
    if t is None or not t.partitions:
        return None
    reg = t.partition(partition_for(key, len(t.partitions)))
    broker = image.brokers.get(reg.leader) if reg is not None else None
    return None if broker is None or broker.fenced else broker
