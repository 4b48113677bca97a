"""The on-disk layout of a local cluster directory (``kraftlog cluster up --dir D``).

::

    D/cluster.json            the layout below, written once by `cluster up`
    D/cluster.secret          the Raft cluster secret (mode 0600)
    D/node-<id>/server.properties   the node's config (mode 0600: it holds the secret)
    D/node-<id>/node.log      stdout+stderr of the node process (appended across restarts)
    D/node-<id>/node.pid      pid of the running node process
    D/node-<id>/node-status.json   the node's own status report (deploy.node_status)
    D/node-<id>/data/         log.dirs (broker partitions; meta.properties)
    D/node-<id>/metadata/     metadata.log.dir (controllers)

``cluster.json``::

    {"format": 1, "cluster_id": "...", "host": "127.0.0.1", "security": "plaintext",
     "nodes": [{"node_id": 1, "roles": ["controller"], "raft_port": 20001,
                "controller_port": 20002, "broker_port": null,
                "metrics_port": 20003}, ...]}

``security`` is the mode of ``cluster up --security`` (deploy/secure_cluster.py; absent means
plaintext); with SASL, brokers also have an ``internal_port`` (their replication listener).
Every node serves its Prometheus metrics on ``metrics_port`` (absent in clusters made before
metrics were on by default: those nodes serve none unless configured).

Node ids: controllers are 1, 2, 3, ...; brokers are 101, 102, 103, ... (so an id says the role).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from deploy.ports import free_ports

LAYOUT_FORMAT = 1
CLUSTER_FILE = "cluster.json"
SECRET_FILE = "cluster.secret"
CONTROLLER_ID_BASE = 1
BROKER_ID_BASE = 101
MAX_CONTROLLERS = 9
MAX_BROKERS = 99


class ClusterLayoutError(Exception):
    """The cluster directory is missing, unreadable or of another format."""


@dataclass(frozen=True, slots=True)
class NodeLayout:
    node_id: int
    roles: tuple[str, ...]
    directory: Path
    raft_port: int | None = None
    controller_port: int | None = None
    broker_port: int | None = None
    metrics_port: int | None = None
    internal_port: int | None = None

    @property
    def is_controller(self) -> bool:
        return "controller" in self.roles

    @property
    def is_broker(self) -> bool:
        return "broker" in self.roles

    @property
    def config_path(self) -> Path:
        return self.directory / "server.properties"

    @property
    def log_path(self) -> Path:
        return self.directory / "node.log"

    @property
    def pid_path(self) -> Path:
        return self.directory / "node.pid"

    @property
    def status_path(self) -> Path:
        return self.directory / "node-status.json"

    @property
    def data_dir(self) -> Path:
        return self.directory / "data"

    @property
    def metadata_dir(self) -> Path:
        return self.directory / "metadata"


@dataclass(frozen=True, slots=True)
class ClusterLayout:
    directory: Path
    cluster_id: str
    host: str
    nodes: tuple[NodeLayout, ...]
    security: str = "plaintext"

    @property
    def controllers(self) -> tuple[NodeLayout, ...]:
        return tuple(n for n in self.nodes if n.is_controller)

    @property
    def brokers(self) -> tuple[NodeLayout, ...]:
        return tuple(n for n in self.nodes if n.is_broker)

    def node(self, node_id: int) -> NodeLayout:
        for n in self.nodes:
            if n.node_id == node_id:
                return n
        raise KeyError(f"no node {node_id} in the cluster at {self.directory}")

    def voters(self) -> str:
        """``controller.quorum.voters``: the Raft ports."""
        return ",".join(f"{n.node_id}@{self.host}:{n.raft_port}" for n in self.controllers)

    def bootstrap_controllers(self) -> list[str]:
        """``controller.quorum.bootstrap.servers``: the controllers' CONTROLLER listeners."""
        return [f"{self.host}:{n.controller_port}" for n in self.controllers]

    def bootstrap_servers(self) -> list[str]:
        """The brokers' client listeners (what Kafka clients bootstrap from: PLAINTEXT, or
        the protocol of the security mode)."""
        return [f"{self.host}:{n.broker_port}" for n in self.brokers]

    def secret_path(self) -> Path:
        return self.directory / SECRET_FILE

    def save(self) -> None:
        doc = {
            "format": LAYOUT_FORMAT,
            "cluster_id": self.cluster_id,
            "host": self.host,
            "security": self.security,
            "nodes": [
                {
                    "node_id": n.node_id,
                    "roles": list(n.roles),
                    "raft_port": n.raft_port,
                    "controller_port": n.controller_port,
                    "broker_port": n.broker_port,
                    "metrics_port": n.metrics_port,
                    "internal_port": n.internal_port,
                }
                for n in self.nodes
            ],
        }
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self.directory / CLUSTER_FILE
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
        os.replace(tmp, path)

    @classmethod
    def load(cls, directory: str | os.PathLike[str]) -> ClusterLayout:
        root = Path(directory).resolve()
        path = root / CLUSTER_FILE
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ClusterLayoutError(
                f"{root} holds no local cluster (no {CLUSTER_FILE}); start one with "
                f"`kraftlog cluster up --dir {directory}`"
            ) from None
        except (OSError, ValueError) as e:
            raise ClusterLayoutError(f"{path}: unreadable: {e}") from None
        if not isinstance(doc, dict) or doc.get("format") != LAYOUT_FORMAT:
            raise ClusterLayoutError(f"{path}: not a format-{LAYOUT_FORMAT} cluster file")
        try:
            nodes = tuple(
                NodeLayout(
                    node_id=int(n["node_id"]),
                    roles=tuple(n["roles"]),
                    directory=root / f"node-{int(n['node_id'])}",
                    raft_port=n.get("raft_port"),
                    controller_port=n.get("controller_port"),
                    broker_port=n.get("broker_port"),
                    metrics_port=n.get("metrics_port"),
                    internal_port=n.get("internal_port"),
                )
                for n in doc["nodes"]
            )
            security = str(doc.get("security", "plaintext"))
            return cls(root, str(doc["cluster_id"]), str(doc["host"]), nodes, security)
        except (KeyError, TypeError, ValueError) as e:
            raise ClusterLayoutError(f"{path}: malformed ({e!r})") from None

    @classmethod
    def exists(cls, directory: str | os.PathLike[str]) -> bool:
        return (Path(directory) / CLUSTER_FILE).is_file()


def plan_layout(
    directory: str | os.PathLike[str],
    *,
    cluster_id: str,
    controllers: int,
    brokers: int,
    host: str = "127.0.0.1",
    security: str = "plaintext",
    internal_listener: bool = False,
) -> ClusterLayout:
    """Choose node ids and free ports for a new cluster (nothing is written); with
    ``internal_listener`` every broker gets a second port for its replication listener."""
    if not 1 <= controllers <= MAX_CONTROLLERS:
        raise ValueError(f"controllers must be 1..{MAX_CONTROLLERS}, got {controllers}")
    if not 0 <= brokers <= MAX_BROKERS:
        raise ValueError(f"brokers must be 0..{MAX_BROKERS}, got {brokers}")
    root = Path(directory).resolve()
    # Per controller: raft, controller listener, metrics; per broker: Kafka listener, metrics
    # (and the internal listener).
    per_broker = 3 if internal_listener else 2
    ports = iter(free_ports(3 * controllers + per_broker * brokers, host=host))
    nodes: list[NodeLayout] = []
    for i in range(controllers):
        node_id = CONTROLLER_ID_BASE + i
        nodes.append(
            NodeLayout(
                node_id,
                ("controller",),
                root / f"node-{node_id}",
                raft_port=next(ports),
                controller_port=next(ports),
                metrics_port=next(ports),
            )
        )
    for i in range(brokers):
        node_id = BROKER_ID_BASE + i
        nodes.append(
            NodeLayout(
                node_id,
                ("broker",),
                root / f"node-{node_id}",
                broker_port=next(ports),
                metrics_port=next(ports),
                internal_port=next(ports) if internal_listener else None,
            )
        )
    return ClusterLayout(root, cluster_id, host, tuple(nodes), security)


def write_private(path: Path, text: str) -> None:
    """Replace ``path`` with ``text``, readable by the owner only (node configs, the cluster
    secret and client settings hold secrets): written to ``<path>.tmp`` and renamed."""
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)
