"""PartitionLogs: the broker's own code that creates, opens, deletes and retires its
partition logs as the committed metadata changes (Kafka's ReplicaManager.applyDelta, log side).

For each metadata change the broker's metadata manager reports (:meth:`apply_delta`, on the
metadata thread, so log creation never runs on the Kafka server's event loop), the partitions
this broker hosts (``delta.local_changes(broker_id)``, Kafka's TopicsDelta.localChanges) become
logs:

- ``deletes`` first (a topic deleted and re-created under the same name in one delta appears
  as a delete of the old id and a create of the new one): ``LogManager.delete_log`` with the
  deleted topic's id (a log already holding the new topic's id is kept);
- then every replica it leads or follows: ``LogManager.get_or_create_log`` with the topic's
  LogConfig (broker defaults from ``server.properties`` overridden by the topic's configs) and
  the topic id, which the log manager records in ``partition.metadata``; a log on disk that
  names another topic id (the topic was deleted and re-created while this broker was down) is
  replaced by a new, empty one;
- topic config changes (which are not replica changes) are pushed to the existing logs;
- then the image is published (:meth:`subscribe`, a :class:`MetadataPublisher`): every
  subscriber, the Kafka server's replica manager first of all, sees an image only once the
  logs it hosts exist, so nothing waits for a log or polls for one.

Stray logs (Kafka's findStrayReplicas): logs found on disk at startup whose partition the
metadata does not assign to this broker (its topic is gone, the partition was reassigned, or
the stored topic id is not the topic's) are deleted once, as soon as the image is known to be
caught up: it holds this broker's registration *of this process* (``incarnation_id``), which
the controller committed after everything that happened while the broker was down. Before
that, a partial image (the first fetch of a restart) could make live logs look stray, so
nothing is deleted on a guess. Without an ``incarnation_id`` the startup scan is skipped
(only metadata deltas delete logs).

Thread-safety: ``apply_delta`` runs on the metadata manager's single metadata thread;
``summary`` and ``subscribe`` may be called from any thread (they read immutable images, a
lock-guarded LogManager and a thread-safe publisher).
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Callable, Mapping
from functools import partial

from common.configdef import ConfigError, with_overrides
from common.log_config import LogConfig
from data_plane.broker.metadata_publisher import ImageSubscriber, MetadataPublisher
from data_plane.storage.log_manager import LogManager
from metadata.brokers import MAX_LOG_END_REPORTS
from metadata.delta import MetadataDelta
from metadata.image import MetadataImage
from metadata.messages import ReplicaLogEnd
from metadata.records import NO_LEADER

logger = logging.getLogger(__name__)

# Above this many partitions the status file carries only counts and the image digest.
STATUS_MAX_PARTITIONS = 2000


class PartitionLogs:
    def __init__(
        self,
        broker_id: int,
        log_manager: LogManager,
        base_config: LogConfig,
        *,
        incarnation_id: str | None = None,
    ) -> None:
        self.broker_id = broker_id
        self.incarnation_id = incarnation_id
        self.stray_scan_done = False
        self.strays_deleted = 0
        self._log_manager = log_manager
        self._base_config = base_config
        # Topic -> the overrides its local logs were last configured with.
        self._applied_overrides: dict[str, Mapping[str, str]] = {}
        self._lock = threading.Lock()
        # The last image digested and its sha256 (the reference keeps id() from being reused).
        self._digest_cache: tuple[MetadataImage, str] | None = None
        # The last image summarised and its image-derived status (same reference rule).
        self._summary_cache: tuple[MetadataImage, dict[str, object]] | None = None
        self.errors = 0
        self._publisher = MetadataPublisher()
        self._log_ends_cache: tuple[MetadataImage, list[ReplicaLogEnd]] | None = None

    def topic_config(self, image: MetadataImage, topic: str) -> LogConfig:
        """The broker defaults overridden by the topic's configs, key by key: a value this
        broker cannot read (a newer controller's range, say) is skipped with a warning rather
        than stopping it from hosting the partition or dropping the topic's other overrides."""
        overrides = image.topic_config(topic)
        if not overrides:
            return self._base_config
        try:
            return with_overrides(self._base_config, overrides, topic=True)
        except ConfigError:
            pass
        config = self._base_config
        for key, value in sorted(overrides.items()):
            try:
                config = with_overrides(config, {key: value}, topic=True)
            except ConfigError as e:
                logger.warning("topic %s: config override ignored: %s", topic, e)
        return config

    def subscribe(self, fn: ImageSubscriber) -> Callable[[], None]:
        """Call ``fn`` with every image whose logs exist (the current one first)."""
        return self._publisher.subscribe(fn)

    def apply_delta(self, image: MetadataImage, delta: MetadataDelta) -> None:
        """Create, delete and reconfigure the logs ``delta`` (which led to ``image``) names,
        then publish ``image``."""
        changes = delta.local_changes(self.broker_id)
        for tp, deleted_id in changes.deletes.items():
            self._apply(
                partial(self._log_manager.delete_log, tp.topic, tp.partition, topic_id=deleted_id),
                tp,
            )
            self._applied_overrides.pop(tp.topic, None)
        hosted = list(changes.leaders.items()) + list(changes.followers.items())
        configs: dict[str, LogConfig] = {}
        # A partition whose log directory failed stays offline until the process restarts.
        offline = self._log_manager.is_offline_partition
        for tp, local in hosted:
            if offline(tp):
                continue
            config = configs.get(tp.topic)
            if config is None:
                config = configs[tp.topic] = self.topic_config(image, tp.topic)
                self._applied_overrides[tp.topic] = image.topic_config(tp.topic)
            self._apply(
                partial(
                    self._log_manager.get_or_create_log,
                    tp.topic,
                    tp.partition,
                    config,
                    topic_id=local.topic_id,
                ),
                tp,
            )
        self._push_config_changes(image, exclude=configs)
        if not self.stray_scan_done and self._caught_up(image):
            self.stray_scan_done = True
            self.delete_stray_logs(image)
        self._publisher.publish(image)

    def leaderless_log_ends(self, image: MetadataImage) -> list[ReplicaLogEnd]:
        """The log end (last leader epoch, log end offset) of every local log whose partition
        has no leader in ``image`` and may be led by this broker (it is in the ISR or the ELR):
        the controller's unclean recovery elects the longest of these (metadata.election).
        Cached per image: with no leader nothing appends to these logs."""
        cached = self._log_ends_cache
        if cached is not None and cached[0] is image:
            return cached[1]
        out = []
        bid = self.broker_id
        for topic, pid, reg in image.iter_partitions():
            if reg.leader != NO_LEADER or (bid not in reg.isr and bid not in reg.elr):
                continue
            plog = self._log_manager.get_log(topic.name, pid)
            if plog is None:
                continue
            out.append(
                ReplicaLogEnd(
                    topic.topic_id,
                    pid,
                    plog.leader_epoch_cache.latest_epoch,
                    plog.log_end_offset,
                )
            )
            if len(out) >= MAX_LOG_END_REPORTS:
                break
        self._log_ends_cache = (image, out)
        return out

    def _caught_up(self, image: MetadataImage) -> bool:
        """Whether ``image`` holds this process's own broker registration (see the module
        docstring)."""
        if self.incarnation_id is None:
            return False
        reg = image.broker(self.broker_id)
        return reg is not None and reg.incarnation_id == self.incarnation_id

    def stray_logs(self, image: MetadataImage) -> list[tuple[str, int]]:
        """Local logs whose partition ``image`` does not assign to this broker, or whose
        stored topic id is not the topic's."""
        out = []
        for lg in self._log_manager.all_logs():
            topic = image.topics_by_name.get(lg.topic)
            reg = None if topic is None else topic.partition(lg.partition)
            if topic is None or reg is None or self.broker_id not in reg.replicas:
                out.append((lg.topic, lg.partition))
                continue
            stored = self._log_manager.topic_id_of(lg.topic, lg.partition)
            if stored is not None and stored != topic.topic_id:
                out.append((lg.topic, lg.partition))
        return out

    def delete_stray_logs(self, image: MetadataImage) -> int:
        """Delete the :meth:`stray_logs` of a caught-up ``image``; return how many."""
        deleted = 0
        for topic, partition in self.stray_logs(image):
            logger.warning(
                "broker %d: deleting stray log %s-%d (not assigned to this broker by the "
                "metadata at offset %d)",
                self.broker_id,
                topic,
                partition,
                image.offset,
            )
            before = self.errors
            self._apply(partial(self._log_manager.delete_log, topic, partition), (topic, partition))
            if self.errors == before:
                deleted += 1
        self.strays_deleted += deleted
        return deleted

    def _push_config_changes(self, image: MetadataImage, exclude: Mapping[str, LogConfig]) -> None:
        changed = [
            topic
            for topic, applied in self._applied_overrides.items()
            if topic not in exclude and image.topic_config(topic) != applied
        ]
        if not changed:
            return
        by_topic: dict[str, list[int]] = {}
        for lg in self._log_manager.all_logs():
            if lg.topic in changed:
                by_topic.setdefault(lg.topic, []).append(lg.partition)
        for topic in changed:
            config = self.topic_config(image, topic)
            self._applied_overrides[topic] = image.topic_config(topic)
            for partition in by_topic.get(topic, []):
                self._apply(
                    partial(self._log_manager.get_or_create_log, topic, partition, config),
                    (topic, partition),
                )

    def _apply(self, action: Callable[[], object], tp: object) -> None:
        try:
            action()
        except Exception:
            # One bad partition (disk full, a name the file system refuses) must not stop the
            # broker from following metadata for every other partition.
            self.errors += 1
            logger.exception(
                "broker %d: applying the metadata change to %s failed", self.broker_id, tp
            )

    def summary(self, image: MetadataImage) -> dict[str, object]:
        """Counts, the image digest and (for small images) every partition, for the status file.
        The image-derived part is built once per image (the status writer asks five times a
        second); only the counters are read again."""
        with self._lock:
            cached = self._summary_cache
        if cached is not None and cached[0] is image:
            from_image = cached[1]
        else:
            from_image = self._image_summary(image)
            with self._lock:
                self._summary_cache = (image, from_image)
        return {
            **from_image,
            "local_logs": len(self._log_manager.all_logs()),
            "apply_errors": self.errors,
            "stray_logs_deleted": self.strays_deleted,
        }

    def _image_summary(self, image: MetadataImage) -> dict[str, object]:
        out: dict[str, object] = {
            "metadata_offset": image.offset,
            "image_sha256": self._image_digest(image),
            "topics_count": len(image.topics_by_name),
            "partitions_count": image.partition_count(),
            "hosted_partitions": sum(
                1 for _t, _p, reg in image.iter_partitions() if self.broker_id in reg.replicas
            ),
        }
        if image.partition_count() <= STATUS_MAX_PARTITIONS:
            out["topics"] = {
                name: {
                    "topic_id": str(t.topic_id),
                    "partitions": {
                        str(pid): {
                            "leader": reg.leader,
                            "leader_epoch": reg.leader_epoch,
                            "partition_epoch": reg.partition_epoch,
                            "replicas": list(reg.replicas),
                            "isr": list(reg.isr),
                        }
                        for pid, reg in sorted(t.partitions.items())
                    },
                }
                for name, t in sorted(image.topics_by_name.items())
            }
        return out

    def _image_digest(self, image: MetadataImage) -> str:
        with self._lock:
            cached = self._digest_cache
            if cached is not None and cached[0] is image:
                return cached[1]
        digest = hashlib.sha256(image.encode()).hexdigest()
        with self._lock:
            self._digest_cache = (image, digest)
        return digest
