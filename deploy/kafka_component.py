"""KafkaComponent: the Kafka wire-protocol server inside a broker node.

It runs after :class:`deploy.broker_component.BrokerComponent` and uses that component's
``log_manager`` and ``partition_logs``: the server subscribes to the images PartitionLogs
publishes once their logs exist, and its replica manager makes the hosted partitions leaders
or followers from each one, on the server's event loop.

- Listens on the node's non-controller ``listeners`` (the advertised endpoints in Metadata
  answers come from the broker registrations in the metadata image).
- Settings: :class:`data_plane.broker.config.BrokerConfig` read from the node's properties;
  ``num.partitions`` / ``default.replication.factor`` / ``min.insync.replicas`` from the node's
  controller-level settings (auto-create and acks=all defaults).
- Admin requests are forwarded with its own :class:`ControllerClient` (thread pool, never on
  the event loop).
- Runs its event loop on a thread of its own (``kraftlog.event.loop``: uvloop if installed).

Shutdown: ``begin_shutdown`` does nothing (the broker component's controlled shutdown moves
leadership away while this server still answers, so clients learn the new leaders from
NOT_LEADER_OR_FOLLOWER); ``stop`` closes listeners and connections, checkpoints the high
watermarks and closes the controller client. Its ``stop`` runs before the broker component
closes the logs (components stop in reverse order).
"""

from __future__ import annotations

import logging
import time

from common.configdef import from_props, to_props
from common.security.config import SecurityConfig
from data_plane.broker.apis import KafkaApis
from data_plane.broker.config import BrokerConfig
from data_plane.broker.handlers import authorization_rules
from data_plane.broker.replica_manager import ReplicaManager
from data_plane.broker.server import KafkaServer, ListenerSpec, ServerThread
from data_plane.metrics.names import node_metrics
from data_plane.security.broker_security import BrokerSecurity
from data_plane.security.grpc_tls import channel_credentials
from deploy.broker_component import BrokerComponent
from deploy.node_config import NodeSettings
from metadata.client import ControllerClient

logger = logging.getLogger(__name__)


def _clock_ms() -> int:
    return time.monotonic_ns() // 1_000_000


class KafkaComponent:
    name = "kafka"

    def __init__(self, settings: NodeSettings, cluster_id: str, broker: BrokerComponent) -> None:
        self.settings = settings
        self.cluster_id = cluster_id
        self.broker = broker
        self.config: BrokerConfig = from_props(BrokerConfig, settings.props)
        self.security_config: SecurityConfig = from_props(SecurityConfig, settings.props)
        controller_listener = settings.controller_listener
        self.listeners = [
            ListenerSpec(lis.name, lis.host, lis.port)
            for lis in settings.listeners
            if controller_listener is None or lis.name != controller_listener.name
        ]
        self._client: ControllerClient | None = None
        self._thread: ServerThread | None = None

    def start(self) -> None:
        log_manager, metadata = self.broker.log_manager, self.broker.metadata
        partition_logs = self.broker.partition_logs
        if log_manager is None or metadata is None or partition_logs is None:
            raise RuntimeError("the broker component must start before the Kafka server")
        s = self.settings
        security_config = self.security_config
        self._client = ControllerClient(
            ",".join(s.bootstrap_controllers),
            self.config.request_timeout_ms / 1000,
            credentials=channel_credentials(security_config)
            if security_config.control_plane_ssl_enabled
            else None,
        )
        client = self._client
        local = {**to_props(s.log), **to_props(self.config)}

        def make_server() -> KafkaServer:
            apis = KafkaApis(
                s.node_id,
                self.cluster_id,
                self.config,
                ReplicaManager(
                    s.node_id,
                    log_manager,
                    s.controller.min_insync_replicas,
                    clock_ms=_clock_ms,
                    replica_lag_time_max_ms=self.config.replica_lag_time_max_ms,
                ),
                client,
                _clock_ms,
                default_num_partitions=s.controller.num_partitions,
                default_replication_factor=s.controller.default_replication_factor,
                local_config=lambda: dict(local),
                authorizer_enabled=security_config.authorizer_enabled,
            )
            security = BrokerSecurity(
                security_config,
                clock_ms=_clock_ms,
                topic_exists=lambda name: metadata.image.topic(name) is not None,
                authorization_rules=authorization_rules(),
            )
            return KafkaServer(
                self.config,
                apis,
                self.listeners,
                metadata_events=partition_logs,
                log_manager=log_manager,
                security=security,
                metrics=node_metrics(),
                committed_metadata_offset=lambda: metadata.committed_offset,
            )

        self._thread = ServerThread(make_server, self.config.event_loop, f"kafka-{s.node_id}")
        try:
            self._thread.start()
        except BaseException:
            self.stop()
            raise

    def begin_shutdown(self) -> None:
        return None

    def stop(self) -> None:
        if self._thread is not None:
            try:
                self._thread.stop()
            except Exception:
                logger.exception("stopping the Kafka server failed")
        if self._client is not None:
            self._client.close()

    def status(self) -> dict[str, object]:
        server = self._thread.server if self._thread is not None else None
        if server is None:
            return {"listening": {}}
        return {
            "listening": {n: f"{h}:{p}" for n, (h, p) in server.bound_addresses.items()},
            "connections": len(server.connections),
            "partitions": len(server.apis.replica_manager.partitions()),
        }
