"""MetadataDelta: records replayed on top of a MetadataImage, and the replica changes they mean
for one broker.

``replay(record, offset)`` is O(1) per record; ``apply()`` builds the next image in
O(changed topics' partitions + number of topics) by shallow-copying only the maps that changed.
Replay never raises: a record that does not fit the current state (a partition change of an
unknown topic, a stale broker epoch, ...) is skipped with a warning, identically on every node,
so every node still ends with the same image.

Thread-safety: a delta is used by one thread; the images it reads and builds are immutable.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from common.config_resources import RESOURCE_TOPIC
from common.topic_partition import TopicPartition
from metadata import features
from metadata.image import BrokerRegistration, MetadataImage, PartitionRegistration, TopicImage
from metadata.records import (
    NO_LEADER_CHANGE,
    SECURITY_RECORD_CLASSES,
    BrokerRegistrationChangeRecord,
    ConfigRecord,
    FeatureLevelRecord,
    MetadataRecord,
    NoOpRecord,
    PartitionChangeRecord,
    PartitionRecord,
    ProducerIdsRecord,
    RegisterBrokerRecord,
    RemoveTopicRecord,
    TopicRecord,
    UnregisterBrokerRecord,
)
from metadata.security_image import SecurityDelta

logger = logging.getLogger(__name__)


def merge_partition_change(
    reg: PartitionRegistration, change: PartitionChangeRecord
) -> PartitionRegistration:
    """The partition after ``change`` (Kafka's PartitionRegistration.merge): a leader other than
    NO_LEADER_CHANGE bumps the leader epoch; every change bumps the partition epoch; None
    fields (replicas, ISR, removing/adding replicas, ELR) keep their current value."""
    leader, leader_epoch = reg.leader, reg.leader_epoch
    if change.leader != NO_LEADER_CHANGE:
        leader, leader_epoch = change.leader, reg.leader_epoch + 1
    return PartitionRegistration(
        replicas=change.replicas if change.replicas is not None else reg.replicas,
        isr=change.isr if change.isr is not None else reg.isr,
        leader=leader,
        leader_epoch=leader_epoch,
        partition_epoch=reg.partition_epoch + 1,
        removing_replicas=reg.removing_replicas
        if change.removing_replicas is None
        else change.removing_replicas,
        adding_replicas=reg.adding_replicas
        if change.adding_replicas is None
        else change.adding_replicas,
        elr=reg.elr if change.elr is None else change.elr,
    )


@dataclass(slots=True)
class _TopicDelta:
    topic_id: uuid.UUID
    name: str
    base: TopicImage | None  # None: created in this delta
    changes: dict[int, PartitionRegistration] = field(default_factory=dict)

    def partition(self, pid: int) -> PartitionRegistration | None:
        reg = self.changes.get(pid)
        if reg is None and self.base is not None:
            reg = self.base.partitions.get(pid)
        return reg


@dataclass(frozen=True, slots=True)
class LocalPartition:
    """A partition replica hosted by the broker that asked for local changes."""

    topic_id: uuid.UUID
    registration: PartitionRegistration


@dataclass(frozen=True, slots=True)
class LocalReplicaChanges:
    """What a delta means for one broker (Kafka's TopicsDelta.localChanges).

    ``deletes``: replicas this broker no longer hosts (topic deleted, or broker removed from the
    replica set), with the topic id of the replica to delete. ``leaders``/``followers``:
    replicas this broker hosts whose partition changed, by the new leader. A topic deleted and
    re-created under the same name in one delta appears in ``deletes`` (old id) and in
    ``leaders``/``followers`` (new id): apply deletes first.
    """

    leaders: dict[TopicPartition, LocalPartition]
    followers: dict[TopicPartition, LocalPartition]
    deletes: dict[TopicPartition, uuid.UUID]

    def is_empty(self) -> bool:
        return not (self.leaders or self.followers or self.deletes)


class MetadataDelta:
    """Changes replayed on top of ``image``; ``apply()`` returns the resulting image."""

    def __init__(self, image: MetadataImage) -> None:
        self.image = image
        self.offset = image.offset
        self._brokers: dict[int, BrokerRegistration | None] = {}
        self._topics: dict[uuid.UUID, _TopicDelta] = {}
        self._removed: dict[uuid.UUID, TopicImage] = {}  # topics of ``image`` removed
        self._names: dict[str, uuid.UUID | None] = {}  # name -> id overlay (None: removed)
        self._configs: dict[tuple[int, str], dict[str, str]] = {}
        self._next_producer_id = image.next_producer_id
        self._replacement: MetadataImage | None = None
        self.skipped_records = 0
        self.security = SecurityDelta(image.security)
        self._features: dict[str, int] | None = None  # None: unchanged

    # --- building -------------------------------------------------------------------------------

    @classmethod
    def from_snapshot(cls, old: MetadataImage, new: MetadataImage) -> MetadataDelta:
        """A delta from ``old`` to ``new`` (a snapshot loaded in place of records): ``apply()``
        returns ``new`` and ``local_changes`` reports every partition that differs."""
        delta = cls(old)
        delta._replacement = new
        delta.offset = new.offset
        for tid, t in old.topics_by_id.items():
            nt = new.topics_by_id.get(tid)
            if nt is None:
                delta._removed[tid] = t
        for tid, nt in new.topics_by_id.items():
            ot = old.topics_by_id.get(tid)
            td = _TopicDelta(tid, nt.name, ot)
            for pid, reg in nt.partitions.items():
                if ot is None or ot.partitions.get(pid) != reg:
                    td.changes[pid] = reg
            if ot is None or td.changes:
                delta._topics[tid] = td
        for bid in set(old.brokers) | set(new.brokers):
            if old.brokers.get(bid) != new.brokers.get(bid):
                delta._brokers[bid] = new.brokers.get(bid)
        if old.features != new.features:
            delta._features = dict(new.features)
        for key in set(old.configs) | set(new.configs):
            if old.configs.get(key) != new.configs.get(key):
                delta._configs[key] = dict(new.configs.get(key, {}))
        return delta

    def replay(self, record: MetadataRecord, offset: int = -1) -> None:
        """Apply one record. Never raises: records that do not fit are skipped and logged."""
        if self._replacement is not None:
            raise RuntimeError("a snapshot delta cannot replay records")
        if offset > self.offset:
            self.offset = offset
        try:
            ok = self._replay(record, offset)
        except Exception:  # a bug here must not stop a node; every node skips alike
            logger.exception("metadata record %r could not be applied; skipped", record)
            ok = False
        if not ok:
            self.skipped_records += 1

    def _replay(self, record: MetadataRecord, offset: int) -> bool:
        handler = _REPLAY.get(type(record))
        if handler is None:
            return _skip(record, "record type not handled by the image")
        return handler(self, record, offset)

    # --- one method per record type (see _REPLAY); False: skipped ------------------------------

    def _replay_partition(self, record: PartitionRecord, _offset: int) -> bool:
        td = self._topic_delta(record.topic_id)
        if td is None:
            return _skip(record, "unknown topic")
        td.changes[record.partition_id] = PartitionRegistration(
            record.replicas,
            record.isr,
            record.leader,
            record.leader_epoch,
            record.partition_epoch,
            record.removing_replicas,
            record.adding_replicas,
            record.elr,
        )
        return True

    def _replay_partition_change(self, record: PartitionChangeRecord, _offset: int) -> bool:
        td = self._topic_delta(record.topic_id)
        reg = td.partition(record.partition_id) if td is not None else None
        if td is None or reg is None:
            return _skip(record, "unknown partition")
        td.changes[record.partition_id] = merge_partition_change(reg, record)
        return True

    def _replay_topic(self, record: TopicRecord, _offset: int) -> bool:
        if self.topic_id_of(record.name) is not None:
            return _skip(record, "topic name already exists")
        if self._topic_delta(record.topic_id) is not None or record.topic_id in self._removed:
            return _skip(record, "topic id already used")
        self._topics[record.topic_id] = _TopicDelta(record.topic_id, record.name, None)
        self._names[record.name] = record.topic_id
        return True

    def _replay_remove_topic(self, record: RemoveTopicRecord, _offset: int) -> bool:
        td = self._topic_delta(record.topic_id)
        if td is None:
            return _skip(record, "unknown topic")
        del self._topics[record.topic_id]
        if td.base is not None:
            self._removed[record.topic_id] = td.base
        self._names[td.name] = None
        self._configs[(RESOURCE_TOPIC, td.name)] = {}
        return True

    def _replay_register_broker(self, record: RegisterBrokerRecord, offset: int) -> bool:
        self._brokers[record.broker_id] = BrokerRegistration(
            broker_id=record.broker_id,
            incarnation_id=record.incarnation_id,
            epoch=record.broker_epoch,
            listeners=record.listeners,
            rack=record.rack,
            fenced=record.fenced,
            in_controlled_shutdown=record.in_controlled_shutdown,
            registered_offset=offset,
            clean_shutdown=record.clean_shutdown,
        )
        return True

    def _replay_broker_change(self, record: BrokerRegistrationChangeRecord, _offset: int) -> bool:
        b = self.broker(record.broker_id)
        if b is None or b.epoch != record.broker_epoch:
            return _skip(record, "unknown broker or stale broker epoch")
        self._brokers[record.broker_id] = replace(
            b,
            fenced=b.fenced if record.fenced is None else record.fenced,
            in_controlled_shutdown=b.in_controlled_shutdown
            if record.in_controlled_shutdown is None
            else record.in_controlled_shutdown,
        )
        return True

    def _replay_unregister_broker(self, record: UnregisterBrokerRecord, _offset: int) -> bool:
        b = self.broker(record.broker_id)
        if b is None or b.epoch != record.broker_epoch:
            return _skip(record, "unknown broker or stale broker epoch")
        self._brokers[record.broker_id] = None
        return True

    def _replay_config(self, record: ConfigRecord, _offset: int) -> bool:
        key = (record.resource_type, record.resource_name)
        current = self._configs.get(key)
        if current is None:
            current = dict(self.image.configs.get(key, {}))
            self._configs[key] = current
        if record.value is None:
            current.pop(record.name, None)
        else:
            current[record.name] = record.value
        return True

    def _replay_producer_ids(self, record: ProducerIdsRecord, _offset: int) -> bool:
        if record.next_producer_id <= self._next_producer_id:
            return _skip(record, "producer id block does not move forward")
        self._next_producer_id = record.next_producer_id
        return True

    def _replay_no_op(self, _record: NoOpRecord, _offset: int) -> bool:
        return True

    def _replay_feature_level(self, record: FeatureLevelRecord, offset: int) -> bool:
        if self._features is None:
            self._features = dict(self.image.features)
        self._features[record.name] = record.feature_level
        features.warn_if_unsupported(record.name, record.feature_level, offset)
        return True

    def _replay_security(self, record: MetadataRecord, _offset: int) -> bool:
        return self.security.replay(record)

    # --- the current view (image + replayed records) --------------------------------------------

    def broker(self, broker_id: int) -> BrokerRegistration | None:
        if broker_id in self._brokers:
            return self._brokers[broker_id]
        return self.image.brokers.get(broker_id)

    def topic_id_of(self, name: str) -> uuid.UUID | None:
        if name in self._names:
            return self._names[name]
        t = self.image.topics_by_name.get(name)
        return t.topic_id if t is not None else None

    def _topic_delta(self, topic_id: uuid.UUID) -> _TopicDelta | None:
        td = self._topics.get(topic_id)
        if td is not None:
            return td
        if topic_id in self._removed:
            return None
        base = self.image.topics_by_id.get(topic_id)
        if base is None:
            return None
        td = _TopicDelta(topic_id, base.name, base)
        self._topics[topic_id] = td
        return td

    def removed_topics(self) -> list[TopicImage]:
        return list(self._removed.values())

    def changed_broker_ids(self) -> list[int]:
        return list(self._brokers)

    def changed_partitions(self) -> list[tuple[uuid.UUID, int, PartitionRegistration]]:
        """(topic id, partition, new registration) of every partition this delta set."""
        return [
            (tid, pid, reg) for tid, td in self._topics.items() for pid, reg in td.changes.items()
        ]

    @property
    def features_changed(self) -> bool:
        """A FeatureLevelRecord was replayed (or a snapshot changed the finalized levels)."""
        return self._features is not None

    def changed_topic_configs(self) -> list[str]:
        """Names of topics whose config overrides this delta touched (set, removed, or dropped
        with the topic)."""
        return sorted(name for rtype, name in self._configs if rtype == RESOURCE_TOPIC)

    # --- results --------------------------------------------------------------------------------

    def apply(self) -> MetadataImage:
        """The image after every replayed record."""
        if self._replacement is not None:
            return self._replacement
        image = self.image
        brokers = image.brokers
        if self._brokers:
            brokers = dict(brokers)
            for bid, reg in self._brokers.items():
                if reg is None:
                    brokers.pop(bid, None)
                else:
                    brokers[bid] = reg
        by_name, by_id = image.topics_by_name, image.topics_by_id
        if self._topics or self._removed:
            by_name, by_id = dict(by_name), dict(by_id)
            for tid, old in self._removed.items():
                by_id.pop(tid, None)
                if by_name.get(old.name) is old:
                    del by_name[old.name]
            for tid, td in self._topics.items():
                if td.base is not None and not td.changes:
                    continue
                parts: dict[int, PartitionRegistration] = (
                    dict(td.base.partitions) if td.base is not None else {}
                )
                parts.update(td.changes)
                t = TopicImage(td.name, tid, parts)
                by_name[td.name] = t
                by_id[tid] = t
        configs = image.configs
        if self._configs:
            configs = dict(configs)
            for key, values in self._configs.items():
                if values:
                    configs[key] = values
                else:
                    configs.pop(key, None)
        return MetadataImage(
            offset=self.offset,
            brokers=brokers,
            topics_by_name=by_name,
            topics_by_id=by_id,
            configs=configs,
            next_producer_id=self._next_producer_id,
            security=self.security.apply(),
            features=image.features if self._features is None else self._features,
        )

    def local_changes(self, broker_id: int) -> LocalReplicaChanges:
        """Which replicas ``broker_id`` now leads, follows, or must delete."""
        leaders: dict[TopicPartition, LocalPartition] = {}
        followers: dict[TopicPartition, LocalPartition] = {}
        deletes: dict[TopicPartition, uuid.UUID] = {}
        for old in self._removed.values():
            for pid, reg in old.partitions.items():
                if broker_id in reg.replicas:
                    deletes[TopicPartition(old.name, pid)] = old.topic_id
        for tid, td in self._topics.items():
            for pid, reg in td.changes.items():
                tp = TopicPartition(td.name, pid)
                if broker_id in reg.replicas:
                    target = leaders if reg.leader == broker_id else followers
                    target[tp] = LocalPartition(tid, reg)
                elif td.base is not None:
                    prev = td.base.partitions.get(pid)
                    if prev is not None and broker_id in prev.replicas:
                        deletes[tp] = tid
        return LocalReplicaChanges(leaders, followers, deletes)


# The replay method of each record type (record classes are final: looked up by exact type).
_REPLAY: dict[type[MetadataRecord], Callable[[MetadataDelta, Any, int], bool]] = {
    PartitionRecord: MetadataDelta._replay_partition,
    PartitionChangeRecord: MetadataDelta._replay_partition_change,
    TopicRecord: MetadataDelta._replay_topic,
    RemoveTopicRecord: MetadataDelta._replay_remove_topic,
    RegisterBrokerRecord: MetadataDelta._replay_register_broker,
    BrokerRegistrationChangeRecord: MetadataDelta._replay_broker_change,
    UnregisterBrokerRecord: MetadataDelta._replay_unregister_broker,
    ConfigRecord: MetadataDelta._replay_config,
    ProducerIdsRecord: MetadataDelta._replay_producer_ids,
    NoOpRecord: MetadataDelta._replay_no_op,
    FeatureLevelRecord: MetadataDelta._replay_feature_level,
    **dict.fromkeys(SECURITY_RECORD_CLASSES, MetadataDelta._replay_security),
}


def _skip(record: MetadataRecord, why: str) -> bool:
    logger.warning("skipping metadata record %s: %s", type(record).__name__, why)
    return False


def apply_records(
    image: MetadataImage, records: Mapping[int, MetadataRecord] | list[MetadataRecord]
) -> MetadataImage:
    """Convenience: replay ``records`` (a list, or offset -> record) and return the new image."""
    delta = MetadataDelta(image)
    if isinstance(records, Mapping):
        for offset, rec in records.items():
            delta.replay(rec, offset)
    else:
        for rec in records:
            delta.replay(rec)
    return delta.apply()
