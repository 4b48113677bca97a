"""MetricsConfig: where a node serves its Prometheus metrics."""

from __future__ import annotations

from dataclasses import dataclass, field

from common.configdef import prop


@dataclass(frozen=True, slots=True)
class MetricsConfig:
    metrics_port: int = field(
        default=-1,
        metadata=prop(
            "metrics.port",
            min=-1,
            max=65535,
            doc="Port of the Prometheus endpoint (GET /metrics); -1 disables it.",
        ),
    )
    metrics_host: str = field(
        default="127.0.0.1",
        metadata=prop("metrics.host", doc="Address the Prometheus endpoint binds."),
    )
