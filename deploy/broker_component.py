"""The broker role of a node: storage plus the metadata follower.

- :class:`data_plane.storage.log_manager.LogManager` over ``log.dirs`` (locks the directories,
  recovers the logs, runs maintenance on its own thread with retention every
  ``log.retention.check.interval.ms``, and the log cleaner threads for compacted topics);
- :class:`metadata.broker_manager.BrokerMetadataManager`: registers with the active
  controller (a new broker epoch each time), heartbeats, follows the metadata log;
- :class:`data_plane.broker.partition_logs.PartitionLogs`: the broker's own code that turns
  each metadata change into partition logs created or deleted on this broker, then publishes
  the image to its subscribers.

The Kafka protocol server is a separate component that reads ``log_manager`` and ``metadata``
from this one and subscribes to ``partition_logs``.

Log directory failures (storage/log_dir_failure.py): a failed directory is reported to the
controller in the next heartbeat, sent at once (``offline_replicas``), so that it moves their
leadership; when the last directory fails the broker asks the node to stop (``on_fatal``).

Shutdown: ``begin_shutdown`` runs the controlled shutdown (the controller moves leadership away
and answers ``should_shut_down``; bounded by ``controlled.shutdown.timeout.ms``); ``stop`` stops
the metadata threads, closes the client and closes the logs (clean-shutdown marker).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable

from common.configdef import from_props
from common.security.config import SecurityConfig
from data_plane.broker.partition_logs import PartitionLogs
from data_plane.security.grpc_tls import channel_credentials
from data_plane.storage.log_manager import LogManager
from deploy.meta_properties import META_PROPERTIES, random_uuid
from deploy.node_config import NodeSettings
from metadata.broker_manager import BrokerMetadataManager
from metadata.client import ControllerClient
from metadata.delta import MetadataDelta
from metadata.image import MetadataImage
from metadata.messages import OfflineReplica
from raft.syncobj_node import LOG_DIR_FILES

logger = logging.getLogger(__name__)

# Files the metadata log keeps in metadata.log.dir: when that directory is also a log dir
# (Kafka's default: metadata.log.dir = the first of log.dirs), the LogManager must accept them.
METADATA_LOG_FILES = (*LOG_DIR_FILES, META_PROPERTIES + ".tmp")


class BrokerComponent:
    name = "broker"

    def __init__(self, settings: NodeSettings, cluster_id: str) -> None:
        self.settings = settings
        self.broker_id = settings.node_id
        self.cluster_id = cluster_id
        # A new incarnation per process start: the controller tells a restarted broker from a
        # duplicate registration by it.
        self.incarnation_id = random_uuid()
        self.log_manager: LogManager | None = None
        self.metadata: BrokerMetadataManager | None = None
        self.partition_logs: PartitionLogs | None = None
        self._client: ControllerClient | None = None
        self.controlled_shutdown_succeeded: bool | None = None
        # Set by the node: called when this broker cannot go on (every log directory failed).
        self.on_fatal: Callable[[str], None] | None = None

    def start(self) -> None:
        s = self.settings
        extra: tuple[str, ...] = ()
        if s.raft is not None:
            meta_dir = os.path.realpath(s.raft.metadata_log_dir)
            if any(os.path.realpath(d) == meta_dir for d in s.log.log_dirs):
                extra = METADATA_LOG_FILES
        self.log_manager = LogManager(s.log, extra_allowed_names=extra)
        try:
            # Flushes and checkpoints every second; retention every
            # log.retention.check.interval.ms; the log cleaner threads per log.cleaner.*.
            self.log_manager.start(retention_check_interval_ms=s.log.retention_check_interval_ms)
            self.partition_logs = PartitionLogs(
                self.broker_id, self.log_manager, s.log, incarnation_id=self.incarnation_id
            )
            security = from_props(SecurityConfig, s.props)
            self._client = ControllerClient(
                ",".join(s.bootstrap_controllers),
                s.node.controller_request_timeout_ms / 1000,
                credentials=channel_credentials(security)
                if security.control_plane_ssl_enabled
                else None,
            )
            listeners = {lis.name: (lis.host, lis.port) for lis in s.advertised_listeners}
            self.metadata = BrokerMetadataManager(
                self.broker_id,
                self._client,
                listeners,
                s.node.broker_rack,
                self.cluster_id,
                self.incarnation_id,
                self._on_change,
                clean_shutdown=self.log_manager.found_clean_shutdown,
                log_ends=self.partition_logs.leaderless_log_ends,
                offline=self._offline_replicas,
            )
            self.log_manager.add_offline_listener(self._dir_offline)
            self.metadata.start()
        except BaseException:
            self.stop()
            raise

    def _on_change(self, image: MetadataImage, delta: MetadataDelta) -> None:
        if self.partition_logs is not None:
            self.partition_logs.apply_delta(image, delta)

    def _dir_offline(self, log_dir: str, _partitions: object) -> None:
        """A log directory failed (log manager's failure thread): tell the controller now;
        with none left, stop the process as Kafka does (a supervisor restarts it once the disk
        is repaired, and the replicas then catch up from their leaders)."""
        if self.metadata is not None:
            self.metadata.heartbeat_now()
        manager = self.log_manager
        if manager is not None and not manager.online_dirs() and self.on_fatal is not None:
            self.on_fatal(f"every log directory failed (the last: {log_dir})")

    def _offline_replicas(self, image: MetadataImage) -> tuple[list[str], list[OfflineReplica]]:
        """The offline log directories and the replicas whose logs they held (topic ids from
        partition.metadata, else from ``image`` by name)."""
        manager = self.log_manager
        if manager is None:
            return [], []
        replicas = []
        for (topic, partition), (_dir, topic_id) in manager.offline_partitions().items():
            if topic_id is None:
                t = image.topic(topic)
                topic_id = t.topic_id if t is not None else None
            if topic_id is not None:
                replicas.append(OfflineReplica(topic_id, partition))
        return sorted(manager.failures.offline_dirs()), replicas

    def begin_shutdown(self) -> None:
        if self.metadata is None or not self.settings.node.controlled_shutdown_enable:
            return
        timeout_s = self.settings.node.controlled_shutdown_timeout_ms / 1000
        self.controlled_shutdown_succeeded = self.metadata.controlled_shutdown(timeout_s)
        if self.controlled_shutdown_succeeded:
            logger.info("broker %d: controlled shutdown complete", self.broker_id)
        else:
            logger.warning(
                "broker %d: controlled shutdown not confirmed within %.1f s; stopping anyway",
                self.broker_id,
                timeout_s,
            )

    def stop(self) -> None:
        if self.metadata is not None:
            try:
                self.metadata.stop()
            except Exception:
                logger.exception("broker %d: stopping the metadata manager failed", self.broker_id)
        if self._client is not None:
            self._client.close()
        if self.log_manager is not None:
            try:
                self.log_manager.close()
            except Exception:
                logger.exception("broker %d: closing the logs failed", self.broker_id)

    def status(self) -> dict[str, object]:
        m = self.metadata
        if m is None or self.partition_logs is None:
            return {"broker_epoch": -1, "fenced": True}
        out: dict[str, object] = {
            "broker_epoch": m.broker_epoch,
            "fenced": m.is_fenced,
            "incarnation_id": self.incarnation_id,
            "listeners": {lis.name: lis.address for lis in self.settings.advertised_listeners},
        }
        out.update(self.partition_logs.summary(m.image))
        if self.log_manager is not None:
            cleaner = self.log_manager.cleaner
            out["log_cleaner"] = {
                "cleanings_completed": cleaner.cleanings_completed,
                "in_progress": [f"{t}-{p}" for t, p in cleaner.manager.in_progress()],
                "uncleanable": {
                    f"{t}-{p}": why
                    for (t, p), why in cleaner.manager.uncleanable_partitions().items()
                },
            }
        return out
