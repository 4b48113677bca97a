"""MetadataImage: the cluster metadata as of one offset of the metadata log.

An image is immutable. :class:`metadata.delta.MetadataDelta` replays records on top of an image
and ``apply()`` builds the next image, copying only the containers that changed: the broker map,
the topic maps, and the partition map of each topic that changed (shallow copies; unchanged
``TopicImage`` and ``PartitionRegistration`` objects are shared between images). Replaying the
same records in the same order gives equal images on every node, and :meth:`MetadataImage.encode`
gives the same bytes for equal images (snapshots).

Snapshot layout (msgpack, ``SNAPSHOT_FORMAT_VERSION`` 2; every list sorted by its first item)::

    [format_version, offset, next_producer_id,
     brokers: [[broker_id, incarnation_id, epoch, [[listener, host, port]...], rack|nil,
                fenced, in_controlled_shutdown, registered_offset (, true)], ...],
     topics:  [[name, topic_id (16 bytes),
                [[partition_id, [replicas], [isr], leader, leader_epoch, partition_epoch,
                  [removing_replicas], [adding_replicas] (, [elr])], ...]],
               ...],
     configs: [[resource_type, resource_name, [[key, value], ...]], ...]]

The optional last items (a broker's ``clean_shutdown`` when true, a partition's eligible leader
replicas when not empty) are written only when set, so images without them keep their bytes.

Format 1 (written before partition reassignment existed) is the same without the last two
partition items; it still decodes (no reassignment in progress). Format 3 appends a seventh
item, the security state (metadata.security_image: SCRAM credentials, ACLs, client quotas); it
is written only when that state is not empty, so images without it keep format 2's bytes.
Format 4 appends an eighth item after the security state (written even when empty), the
finalized feature levels ``[[name, level], ...]`` (metadata.features); it is written only when
a level is finalized.

Thread-safety: immutable, so any thread may read an image.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import msgpack

from common.config_resources import RESOURCE_TOPIC
from metadata.records import NO_LEADER, Listener
from metadata.security_image import SecurityImage

SNAPSHOT_FORMAT_VERSION = 2
# With a non-empty security state (the 7th item).
SNAPSHOT_FORMAT_WITH_SECURITY = 3
# With finalized feature levels (the 8th item; the 7th is then always present).
SNAPSHOT_FORMAT_WITH_FEATURES = 4
# Older formats this code still reads.
READABLE_SNAPSHOT_FORMATS = (1, 2, 3, 4)
_FORMAT_ITEMS = {1: 6, 2: 6, 3: 7, 4: 8}


class SnapshotDecodeError(ValueError):
    """The bytes are not a snapshot this code can read."""


@dataclass(frozen=True, slots=True)
class BrokerRegistration:
    """A registered broker. ``epoch`` changes on every (re)registration; ``registered_offset``
    is the log offset of its RegisterBrokerRecord (the broker is caught up, and may be unfenced,
    once its metadata offset reaches it)."""

    broker_id: int
    incarnation_id: str
    epoch: int
    listeners: tuple[Listener, ...]
    rack: str | None
    fenced: bool
    in_controlled_shutdown: bool
    registered_offset: int = -1
    # The process that registered found its logs closed cleanly (RegisterBrokerRecord v1).
    clean_shutdown: bool = False

    def listener(self, name: str) -> Listener | None:
        for lis in self.listeners:
            if lis.name == name:
                return lis
        return None

    @property
    def is_active(self) -> bool:
        """Eligible for leadership and new replicas: unfenced and not shutting down."""
        return not self.fenced and not self.in_controlled_shutdown


@dataclass(frozen=True, slots=True)
class PartitionRegistration:
    """Invariants (checked by the controller before it writes a record): ``isr`` is a
    non-empty subset of ``replicas``; ``leader`` is in ``isr`` or is -1; the epochs only grow;
    ``removing_replicas`` and ``adding_replicas`` are disjoint subsets of ``replicas``, both
    empty unless a reassignment is in progress (then ``replicas`` = target + removing, in that
    order, and ``adding_replicas`` are target replicas not yet known to be caught up);
    ``elr`` is a subset of ``replicas`` disjoint from ``isr``."""

    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int
    partition_epoch: int
    removing_replicas: tuple[int, ...] = ()
    adding_replicas: tuple[int, ...] = ()
    # Eligible leader replicas (KIP-966): replicas taken out of the ISR by fencing or shutdown
    # while that left the ISR below min.insync.replicas. They held every committed record then,
    # and nothing commits while the ISR stays below min.insync.replicas, so they may lead when
    # no ISR member can. Disjoint from ``isr``; empty whenever the ISR is at or above the minimum.
    elr: tuple[int, ...] = ()

    def has_leader(self) -> bool:
        return self.leader != NO_LEADER

    @property
    def is_reassigning(self) -> bool:
        return bool(self.removing_replicas or self.adding_replicas)

    @property
    def target_replicas(self) -> tuple[int, ...]:
        """Where the replicas will be once the reassignment completes (``replicas`` if none)."""
        if not self.removing_replicas:
            return self.replicas
        return tuple(r for r in self.replicas if r not in self.removing_replicas)

    @property
    def original_replicas(self) -> tuple[int, ...]:
        """The replicas before the reassignment began (what cancelling restores)."""
        if not self.adding_replicas:
            return self.replicas
        return tuple(r for r in self.replicas if r not in self.adding_replicas)


@dataclass(frozen=True, slots=True)
class TopicImage:
    name: str
    topic_id: uuid.UUID
    partitions: Mapping[int, PartitionRegistration]  # read-only: shared between images

    def partition(self, partition_id: int) -> PartitionRegistration | None:
        return self.partitions.get(partition_id)


@dataclass(frozen=True, slots=True)
class MetadataImage:
    """The state after applying every log entry up to and including ``offset`` (-1: none)."""

    offset: int = -1
    brokers: Mapping[int, BrokerRegistration] = field(default_factory=dict)
    topics_by_name: Mapping[str, TopicImage] = field(default_factory=dict)
    topics_by_id: Mapping[uuid.UUID, TopicImage] = field(default_factory=dict)
    # (resource_type, resource_name) -> {key: value}; only non-empty maps are kept.
    configs: Mapping[tuple[int, str], Mapping[str, str]] = field(default_factory=dict)
    next_producer_id: int = 0
    # SCRAM credentials, ACL bindings, client quotas.
    security: SecurityImage = field(default_factory=SecurityImage)
    # Finalized feature levels by feature name (FeatureLevelRecord; metadata.features).
    features: Mapping[str, int] = field(default_factory=dict)

    # --- queries --------------------------------------------------------------------------------

    def topic(self, name: str) -> TopicImage | None:
        return self.topics_by_name.get(name)

    def partition(self, topic: str, partition_id: int) -> PartitionRegistration | None:
        t = self.topics_by_name.get(topic)
        return t.partitions.get(partition_id) if t is not None else None

    def topic_config(self, name: str) -> Mapping[str, str]:
        """Per-topic overrides (Kafka topic-level keys such as ``retention.ms``)."""
        return self.configs.get((RESOURCE_TOPIC, name), {})

    def broker(self, broker_id: int) -> BrokerRegistration | None:
        return self.brokers.get(broker_id)

    def active_broker_ids(self) -> list[int]:
        """Sorted ids of brokers that are unfenced and not in controlled shutdown."""
        return sorted(b.broker_id for b in self.brokers.values() if b.is_active)

    def iter_partitions(self) -> Iterator[tuple[TopicImage, int, PartitionRegistration]]:
        for t in self.topics_by_name.values():
            for pid, reg in t.partitions.items():
                yield t, pid, reg

    def partition_count(self) -> int:
        return sum(len(t.partitions) for t in self.topics_by_name.values())

    # --- snapshots ------------------------------------------------------------------------------

    def encode(self) -> bytes:
        """Deterministic snapshot bytes (see the module docstring)."""
        brokers = [
            [
                b.broker_id,
                b.incarnation_id,
                b.epoch,
                [[lis.name, lis.host, lis.port] for lis in b.listeners],
                b.rack,
                b.fenced,
                b.in_controlled_shutdown,
                b.registered_offset,
                *((True,) if b.clean_shutdown else ()),
            ]
            for _, b in sorted(self.brokers.items())
        ]
        topics = [
            [
                name,
                t.topic_id.bytes,
                [
                    [
                        pid,
                        list(p.replicas),
                        list(p.isr),
                        p.leader,
                        p.leader_epoch,
                        p.partition_epoch,
                        list(p.removing_replicas),
                        list(p.adding_replicas),
                        *((list(p.elr),) if p.elr else ()),
                    ]
                    for pid, p in sorted(t.partitions.items())
                ],
            ]
            for name, t in sorted(self.topics_by_name.items())
        ]
        configs = [
            [rtype, rname, [[k, v] for k, v in sorted(values.items())]]
            for (rtype, rname), values in sorted(self.configs.items())
        ]
        doc = [
            SNAPSHOT_FORMAT_VERSION,
            self.offset,
            self.next_producer_id,
            brokers,
            topics,
            configs,
        ]
        if self.features:
            doc[0] = SNAPSHOT_FORMAT_WITH_FEATURES
            doc.append(self.security.encode_doc())
            doc.append([[name, level] for name, level in sorted(self.features.items())])
        elif not self.security.is_empty():
            doc[0] = SNAPSHOT_FORMAT_WITH_SECURITY
            doc.append(self.security.encode_doc())
        return msgpack.packb(doc, use_bin_type=True)

    @staticmethod
    def decode(data: bytes) -> MetadataImage:
        """Inverse of :meth:`encode`; raises :class:`SnapshotDecodeError` on bad input."""
        try:
            doc = msgpack.unpackb(data, raw=False, use_list=True, strict_map_key=True)
            return _decode_doc(doc)
        except SnapshotDecodeError:
            raise
        except Exception as exc:  # malformed input surfaces as many exception types
            raise SnapshotDecodeError(f"malformed metadata snapshot: {exc!r}") from None


def _decode_doc(doc: Any) -> MetadataImage:
    if not isinstance(doc, list) or not doc or doc[0] not in READABLE_SNAPSHOT_FORMATS:
        raise SnapshotDecodeError("unknown snapshot format")
    if len(doc) != _FORMAT_ITEMS[doc[0]]:
        raise SnapshotDecodeError(f"format {doc[0]}: {len(doc)} items")
    partition_items = 6 if doc[0] == 1 else 8
    fmt, offset, next_pid, raw_brokers, raw_topics, raw_configs = doc[:6]
    security = SecurityImage.decode_doc(doc[6]) if len(doc) >= 7 else SecurityImage()
    features = {str(name): int(level) for name, level in doc[7]} if len(doc) == 8 else {}
    brokers: dict[int, BrokerRegistration] = {}
    for raw_broker in raw_brokers:
        if len(raw_broker) not in (8, 9):
            raise SnapshotDecodeError(f"format {fmt}: broker entry of {len(raw_broker)} items")
        bid, inc, epoch, lis, rack, fenced, cs, reg_offset = raw_broker[:8]
        brokers[int(bid)] = BrokerRegistration(
            broker_id=int(bid),
            incarnation_id=str(inc),
            epoch=int(epoch),
            listeners=tuple(Listener(str(n), str(h), int(p)) for n, h, p in lis),
            rack=None if rack is None else str(rack),
            fenced=bool(fenced),
            in_controlled_shutdown=bool(cs),
            registered_offset=int(reg_offset),
            clean_shutdown=len(raw_broker) == 9 and bool(raw_broker[8]),
        )
    by_name: dict[str, TopicImage] = {}
    by_id: dict[uuid.UUID, TopicImage] = {}
    for name, tid, raw_parts in raw_topics:
        parts = {}
        for raw in raw_parts:
            if len(raw) != partition_items and not (partition_items == 8 and len(raw) == 9):
                raise SnapshotDecodeError(f"format {fmt}: partition entry of {len(raw)} items")
            pid, replicas, isr, leader, le, pe = raw[:6]
            removing, adding = raw[6:8] if partition_items == 8 else ((), ())
            elr = raw[8] if len(raw) == 9 else ()
            parts[int(pid)] = PartitionRegistration(
                tuple(int(r) for r in replicas),
                tuple(int(r) for r in isr),
                int(leader),
                int(le),
                int(pe),
                tuple(int(r) for r in removing),
                tuple(int(r) for r in adding),
                tuple(int(r) for r in elr),
            )
        t = TopicImage(str(name), uuid.UUID(bytes=tid), parts)
        by_name[t.name] = t
        by_id[t.topic_id] = t
    configs = {
        (int(rtype), str(rname)): {str(k): str(v) for k, v in values}
        for rtype, rname, values in raw_configs
    }
    return MetadataImage(
        int(offset), brokers, by_name, by_id, configs, int(next_pid), security, features
    )
