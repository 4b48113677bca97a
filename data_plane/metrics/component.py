"""MetricsComponent: a node component (deploy.node.Component protocol) serving the node's
metrics (:func:`names.node_metrics`) on ``metrics.host``:``metrics.port`` while the node runs.
It starts first and stops last, so the other components' metrics are scrapeable throughout.

Thread-safety: start/stop from the node's main thread.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from common.configdef import from_props
from data_plane.metrics.config import MetricsConfig
from data_plane.metrics.http import MetricsHttpServer
from data_plane.metrics.names import node_metrics

logger = logging.getLogger(__name__)


class MetricsComponent:
    name = "metrics"

    def __init__(self, props: Mapping[str, str]) -> None:
        self.config: MetricsConfig = from_props(MetricsConfig, props)
        self._server: MetricsHttpServer | None = None

    @property
    def enabled(self) -> bool:
        return self.config.metrics_port >= 0

    def start(self) -> None:
        if not self.enabled:
            return
        self._server = MetricsHttpServer(
            node_metrics().registry, self.config.metrics_host, self.config.metrics_port
        )
        self._server.start()
        logger.info("metrics on http://%s:%d/metrics", self.config.metrics_host, self._server.port)

    def begin_shutdown(self) -> None:
        return None

    def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None

    def status(self) -> dict[str, object]:
        if self._server is None:
            return {"metrics": None}
        return {"metrics": f"http://{self.config.metrics_host}:{self._server.port}/metrics"}
