"""LocalReplicas: keeps a broker's partition logs in step with the committed metadata.

For each metadata change the broker's metadata manager reports, the partitions this broker
hosts (``delta.local_changes(broker_id)``, Kafka's TopicsDelta.localChanges) become logs:

- ``deletes`` first (a topic deleted and re-created under the same name in one delta appears
  as a delete of the old id and a create of the new one): ``LogManager.delete_log``;
- then every replica it leads or follows: ``LogManager.get_or_create_log`` with the topic's
  LogConfig (broker defaults from ``server.properties`` overridden by the topic's configs);
- topic config changes (which are not replica changes) are pushed to the existing logs.

Logs found on disk for partitions the metadata no longer assigns here are left alone: deleting
data on a guess at startup is worse than keeping a stray directory.

Thread-safety: ``on_change`` runs on the metadata manager's single metadata thread; ``summary``
may be called from any thread (it reads immutable images and a lock-guarded LogManager).
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Callable, Mapping

from data_plane.configdef import ConfigError, with_overrides
from data_plane.storage.config import LogConfig
from data_plane.storage.log_manager import LogManager
from metadata.delta import MetadataDelta
from metadata.image import MetadataImage

log = logging.getLogger(__name__)

# Above this many partitions the status file carries only counts and the image digest.
STATUS_MAX_PARTITIONS = 2000


class LocalReplicas:
    def __init__(self, broker_id: int, log_manager: LogManager, base_config: LogConfig) -> None:
        self.broker_id = broker_id
        self._log_manager = log_manager
        self._base_config = base_config
        # Topic -> the overrides its local logs were last configured with.
        self._applied_overrides: dict[str, Mapping[str, str]] = {}
        self._lock = threading.Lock()
        # The last image digested and its sha256 (the reference keeps id() from being reused).
        self._digest_cache: tuple[MetadataImage, str] | None = None
        self.changes_applied = 0
        self.errors = 0

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
                log.warning("topic %s: config override ignored: %s", topic, e)
        return config

    def on_change(self, image: MetadataImage, delta: MetadataDelta) -> None:
        changes = delta.local_changes(self.broker_id)
        for tp in changes.deletes:
            self._apply(lambda tp=tp: self._log_manager.delete_log(tp.topic, tp.partition), tp)
            self._applied_overrides.pop(tp.topic, None)
        hosted = list(changes.leaders) + list(changes.followers)
        configs: dict[str, LogConfig] = {}
        for tp in hosted:
            config = configs.get(tp.topic)
            if config is None:
                config = configs[tp.topic] = self.topic_config(image, tp.topic)
                self._applied_overrides[tp.topic] = image.topic_config(tp.topic)
            self._apply(
                lambda tp=tp, c=config: self._log_manager.get_or_create_log(
                    tp.topic, tp.partition, c
                ),
                tp,
            )
        self._push_config_changes(image, exclude=configs)
        self.changes_applied += 1

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
                    lambda t=topic, p=partition, c=config: self._log_manager.get_or_create_log(
                        t, p, c
                    ),
                    (topic, partition),
                )

    def _apply(self, action: Callable[[], object], tp: object) -> None:
        try:
            action()
        except Exception:
            # One bad partition (disk full, a name the file system refuses) must not stop the
            # broker from following metadata for every other partition.
            self.errors += 1
            log.exception(
                "broker %d: applying the metadata change to %s failed", self.broker_id, tp
            )

    def summary(self, image: MetadataImage) -> dict[str, object]:
        """Counts, the image digest and (for small images) every partition, for the status file."""
        digest = self._image_digest(image)
        out: dict[str, object] = {
            "metadata_offset": image.offset,
            "image_sha256": digest,
            "topics_count": len(image.topics_by_name),
            "partitions_count": image.partition_count(),
            "hosted_partitions": sum(
                1 for _t, _p, reg in image.iter_partitions() if self.broker_id in reg.replicas
            ),
            "local_logs": len(self._log_manager.all_logs()),
            "apply_errors": self.errors,
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
