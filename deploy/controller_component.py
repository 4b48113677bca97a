"""The controller role of a node: one voter of the metadata log plus its gRPC control plane.

Start order (see :mod:`metadata.service`): the ControllerServer binds the CONTROLLER listener
and publishes its address through ``MetadataLog.set_leader_info`` BEFORE the log starts, so
the first leader-change entry this voter commits already names where clients find it.
Stop order: the gRPC server first (no new requests), then the log.
"""

from __future__ import annotations

import logging
import socket

from common.configdef import from_props
from common.security.config import SecurityConfig
from data_plane.metrics.names import node_metrics
from data_plane.security.grpc_tls import server_credentials
from deploy.node_config import NodeSettings
from metadata.control_plane_authz import control_plane_authorizer
from metadata.service import ControllerServer
from metadata.snapshot import build_snapshot
from raft.metadata_log import MetadataLog

logger = logging.getLogger(__name__)

# Seconds the gRPC server gives in-flight requests when the node stops.
GRPC_STOP_GRACE_S = 0.5


class ControllerComponent:
    name = "controller"

    def __init__(self, settings: NodeSettings, cluster_id: str) -> None:
        if settings.raft is None or settings.controller_listener is None:
            raise ValueError("not a controller: process.roles has no controller")
        listener = settings.controller_listener
        self._listen_host = listener.host or "0.0.0.0"
        advertised = listener.host
        if advertised in ("", "0.0.0.0", "::"):
            advertised = socket.getfqdn()
        self.metadata_log = MetadataLog(settings.raft, build_snapshot)
        security = from_props(SecurityConfig, settings.props)
        metrics = node_metrics()
        self.server = ControllerServer(
            settings.node_id,
            self.metadata_log,
            settings.controller,
            self._listen_host,
            listener.port,
            cluster_id=cluster_id,
            advertised_host=advertised,
            credentials=server_credentials(security)
            if security.control_plane_ssl_enabled
            else None,
            on_commit_latency_s=metrics.raft_commit_latency.observe,
            authorizer=control_plane_authorizer(security),
        )
        server, log_ = self.server, self.metadata_log
        metrics.active_controller.set_function(lambda: 1 if server.is_active else 0)
        if not settings.node.is_broker:  # a broker role reports the offsets it applied
            metrics.metadata_offset.set_function(lambda: server.controller.image.offset)
            metrics.metadata_offset_lag.set_function(
                lambda: max(0, log_.committed_offset - server.controller.image.offset)
            )
        self._raft_address = settings.raft.own_address
        self._started_log = False

    def start(self) -> None:
        self.server.start()
        try:
            self.metadata_log.start()
        except BaseException:
            self.server.stop(0)
            raise
        self._started_log = True

    def begin_shutdown(self) -> None:
        """Nothing to hand over: the remaining voters elect a new leader on their own."""

    def stop(self) -> None:
        try:
            self.server.stop(GRPC_STOP_GRACE_S)
        except Exception:
            logger.exception("stopping the controller gRPC server failed")
        if self._started_log:
            self.metadata_log.close()

    def status(self) -> dict[str, object]:
        log_ = self.metadata_log
        return {
            "address": self.server.address,
            "raft_address": self._raft_address,
            "active": self.server.is_active,
            "voter": log_.is_voter,
            "leader_id": log_.leader_id,
            "epoch": log_.epoch,
            "committed_offset": log_.committed_offset,
        }
