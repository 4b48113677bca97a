"""Monitoring files for a local cluster (``kraftlog cluster up --monitoring``): a Prometheus
scrape configuration of every node's metrics endpoint and Grafana provisioning that loads
kraftlog's dashboard (``deploy/grafana/kraftlog.json``) over that Prometheus.

Written under the cluster directory::

    D/monitoring/prometheus.yml
    D/monitoring/grafana/provisioning/datasources/kraftlog.yml
    D/monitoring/grafana/provisioning/dashboards/kraftlog.yml
    D/monitoring/grafana/dashboards/kraftlog.json

Run them with ``prometheus --config.file=D/monitoring/prometheus.yml`` and Grafana with
``GF_PATHS_PROVISIONING=D/monitoring/grafana/provisioning`` (docs/metrics.md). The YAML is
written by hand (scalars are plain numbers or double-quoted JSON strings, which YAML reads
as the same strings), so no YAML library is needed.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from deploy.cluster_layout import ClusterLayout

MONITORING_DIR = "monitoring"
DASHBOARD_SOURCE = Path(__file__).resolve().parent / "grafana" / "kraftlog.json"
# Where the Grafana datasource expects Prometheus (its default listen address).
DEFAULT_PROMETHEUS_URL = "http://127.0.0.1:9090"
SCRAPE_INTERVAL = "5s"
JOB_NAME = "kraftlog"


def _q(value: str) -> str:
    """A double-quoted YAML scalar (a JSON string is one)."""
    return json.dumps(value)


def prometheus_config(layout: ClusterLayout, metrics_ports: dict[int, int]) -> str:
    """The scrape configuration: one target per node with its ``node_id`` and ``role``."""
    lines = [
        "# kraftlog local cluster: written by `kraftlog cluster up --monitoring`",
        "global:",
        f"  scrape_interval: {SCRAPE_INTERVAL}",
        "scrape_configs:",
        f"  - job_name: {_q(JOB_NAME)}",
        "    static_configs:",
    ]
    for node in layout.nodes:
        port = metrics_ports.get(node.node_id)
        if port is None:
            continue
        lines += [
            f"      - targets: [{_q(f'{layout.host}:{port}')}]",
            "        labels:",
            f"          node_id: {_q(str(node.node_id))}",
            f"          role: {_q(','.join(node.roles))}",
            f"          cluster_id: {_q(layout.cluster_id)}",
        ]
    return "\n".join(lines) + "\n"


def grafana_datasource(prometheus_url: str) -> str:
    return (
        "\n".join(
            [
                "apiVersion: 1",
                "datasources:",
                f"  - name: {_q('Prometheus')}",
                "    type: prometheus",
                "    access: proxy",
                f"    url: {_q(prometheus_url)}",
                "    isDefault: true",
            ]
        )
        + "\n"
    )


def grafana_dashboard_provider(dashboards_dir: Path) -> str:
    return (
        "\n".join(
            [
                "apiVersion: 1",
                "providers:",
                f"  - name: {_q('kraftlog')}",
                "    type: file",
                "    options:",
                f"      path: {_q(str(dashboards_dir))}",
            ]
        )
        + "\n"
    )


def write_monitoring_files(
    layout: ClusterLayout,
    metrics_ports: dict[int, int],
    prometheus_url: str = DEFAULT_PROMETHEUS_URL,
) -> Path:
    """Write (or rewrite) the files above for ``layout`` whose nodes serve metrics on
    ``metrics_ports`` (node id -> port); returns ``D/monitoring``."""
    root = layout.directory / MONITORING_DIR
    provisioning = root / "grafana" / "provisioning"
    dashboards = root / "grafana" / "dashboards"
    for d in (provisioning / "datasources", provisioning / "dashboards", dashboards):
        d.mkdir(parents=True, exist_ok=True)
    (root / "prometheus.yml").write_text(prometheus_config(layout, metrics_ports), encoding="utf-8")
    (provisioning / "datasources" / "kraftlog.yml").write_text(
        grafana_datasource(prometheus_url), encoding="utf-8"
    )
    (provisioning / "dashboards" / "kraftlog.yml").write_text(
        grafana_dashboard_provider(dashboards), encoding="utf-8"
    )
    shutil.copyfile(DASHBOARD_SOURCE, dashboards / DASHBOARD_SOURCE.name)
    return root
