"""LocalCluster: a whole kraftlog cluster as processes on one machine.

What ``kraftlog cluster up|down|status`` runs, and what the integration tests, the benchmark
and the chaos suites drive, so they all exercise the same code. The directory layout is in
:mod:`deploy.cluster_layout`; processes are managed by :mod:`deploy.processes`.

Life cycle::

    cluster = LocalCluster.create(dir, controllers=3, brokers=3, overrides={...})
        plans ports, writes cluster.json, the secret, one server.properties per node, and
        formats every node's storage (the same code as `kraftlog storage format`)
    cluster.start()              starts every node that is not running (detached, own session)
    cluster.wait_ready(30)       quorum has a leader, every broker registered and unfenced
    cluster.kill(1) / pause(1) / resume(1) / restart(101) / stop_node(102)
    cluster.down()               SIGTERM brokers, then controllers; SIGKILL after the grace

``LocalCluster.open(dir)`` attaches to a cluster another process started (``cluster up
--detach``); it finds the nodes through their pid files.

Placement: by default every node listens on the layout's host (127.0.0.1) and runs as a plain
child process. A :class:`NodePlacement` (``create(..., placement=factory)`` or
``open(dir, placement)``) puts the nodes elsewhere: it gives each node its address, rewrites
the node configs to it and spawns the node processes; :meth:`close` destroys it. The chaos
suite's network namespaces (``chaos.netns.NetnsTopology``) are one.

Thread-safety: none; one LocalCluster per thread (tests, the CLI).
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Protocol, TypeVar

from common.configdef import ConfigError, from_props, load_properties
from common.security.config import SecurityConfig
from common.security.scram import ScramMechanism
from data_plane.security.grpc_tls import channel_credentials
from deploy import processes
from deploy.cluster_info import ControllerView, probe_controllers
from deploy.cluster_layout import (
    BROKER_ID_BASE,
    MAX_BROKERS,
    MAX_CONTROLLERS,
    ClusterLayout,
    NodeLayout,
    plan_layout,
    write_private,
)
from deploy.meta_properties import format_directories, random_uuid
from deploy.node_config import load_node_config
from deploy.node_status import read_status
from deploy.ports import free_ports
from deploy.secure_cluster import (
    ADMIN_USER,
    SCRAM_ITERATIONS,
    SecurityMode,
    admin_control_plane_properties,
    client_files,
    create_certificates,
    new_admin_password,
    node_security_properties,
    write_client_files,
)
from metadata.client import ControllerClient
from metadata.security_client import set_scram_password
from raft.config import RAFT_ADDRESS_KEY

T = TypeVar("T")

# Default wait for `cluster up` until the quorum has a leader and every broker is unfenced.
DEFAULT_READY_TIMEOUT_S = 60.0
# SIGTERM -> SIGKILL grace of `cluster down`: a broker's controlled shutdown fits in it.
DEFAULT_STOP_GRACE_S = 15.0
_POLL_INTERVAL_S = 0.1
_PROBE_TIMEOUT_S = 2.0
_LOG_TAIL_LINES = 30

# Settings of every local cluster (overridable): all voters share one loopback interface, so a
# shorter election timeout than the 1000 ms default is safe and roughly halves failover time.
# Kafka's default replication factor of __consumer_offsets; local clusters use fewer when they
# have fewer brokers.
OFFSETS_TOPIC_MAX_REPLICATION_FACTOR = 3

LOCAL_CLUSTER_DEFAULTS: Mapping[str, str] = {
    "controller.quorum.election.timeout.ms": "500",
}

# Keys of a node's config that name the node itself (not copied to a node added later).
_NODE_SPECIFIC_KEYS = frozenset(
    {
        "node.id",
        "process.roles",
        "listeners",
        "advertised.listeners",
        "log.dirs",
        "metrics.port",
        "metadata.log.dir",
        "controller.quorum.voters",
        RAFT_ADDRESS_KEY,
    }
)

# Order of keys in generated config files (others follow, sorted).
_KEY_ORDER = (
    "process.roles",
    "node.id",
    "listeners",
    "advertised.listeners",
    "controller.quorum.voters",
    "controller.quorum.bootstrap.servers",
    "controller.quorum.secret",
    "log.dirs",
    "metadata.log.dir",
)


class ClusterError(Exception):
    """A local cluster did not start or does not answer; the message says which node and why."""


def wait_until(
    predicate: Callable[[], T | None], timeout_s: float, what: str, interval_s: float = 0.05
) -> T:
    """Poll ``predicate`` until it returns a truthy value (returned), at most ``timeout_s``;
    then raise ClusterError naming ``what``. Exceptions from the predicate count as "not yet"
    and the last one is quoted."""
    deadline = time.monotonic() + timeout_s
    last_error: Exception | None = None
    while True:
        try:
            value = predicate()
            if value:
                return value
        except Exception as e:  # a cluster in flux answers with errors; keep polling
            last_error = e
        if time.monotonic() >= deadline:
            detail = (
                f" (last error: {type(last_error).__name__}: {last_error})" if last_error else ""
            )
            raise ClusterError(f"timed out after {timeout_s:.1f} s waiting for {what}{detail}")
        time.sleep(interval_s)


class NodePlacement(Protocol):
    """Where a LocalCluster's nodes live on the network, when not all on the layout's host."""

    def address(self, node_id: int) -> str:
        """The address node ``node_id`` listens on."""
        ...

    def rewrite_addresses(self, props: Mapping[str, str], layout: ClusterLayout) -> dict[str, str]:
        """A node's properties with every ``host:port`` of the layout pointed at the address
        of the node owning the port."""
        ...

    def spawn_node(self, node_id: int, node: NodeLayout) -> subprocess.Popen[bytes]:
        """Start the node process (detached, writing its pid, status and log files)."""
        ...

    def destroy(self) -> None:
        """Remove whatever the placement made (the cluster's processes are gone by then)."""
        ...

    def reachable(self) -> bool:
        """Whether this process reaches the nodes' addresses."""
        ...

    def wait_ready_remotely(self, directory: Path, timeout_s: float) -> None:
        """Run :meth:`LocalCluster.wait_ready` of the cluster in ``directory`` from a place
        that reaches the nodes; raise ClusterError if it fails."""
        ...


# Makes a placement for the node ids of a new layout (and records it in the cluster
# directory if other processes must find it).
PlacementFactory = Callable[[list[int], Path], NodePlacement]


class LocalCluster:
    def __init__(self, layout: ClusterLayout, placement: NodePlacement | None = None) -> None:
        self.layout = layout
        self._children: dict[int, subprocess.Popen[bytes]] = {}
        self.placement = placement

    # --- creation -------------------------------------------------------------------------------

    @classmethod
    def create(
        cls,
        directory: str | os.PathLike[str],
        *,
        controllers: int = 3,
        brokers: int = 3,
        host: str = "127.0.0.1",
        overrides: Mapping[str, str] | None = None,
        cluster_id: str | None = None,
        placement: PlacementFactory | None = None,
        security: SecurityMode = SecurityMode.PLAINTEXT,
    ) -> LocalCluster:
        """Write a new cluster into ``directory`` (which must not hold one) and format it.
        With ``placement``, the factory makes the :class:`NodePlacement` of the new layout's
        nodes (destroyed again if the cluster cannot be written). ``security``: see
        deploy/secure_cluster.py (certificates are made here; the admin user once it runs,
        :meth:`finish_security`)."""
        if ClusterLayout.exists(directory):
            raise ClusterError(f"{directory} already holds a cluster; use LocalCluster.open")
        layout = plan_layout(
            directory,
            cluster_id=cluster_id or random_uuid(),
            controllers=controllers,
            brokers=brokers,
            host=host,
            security=security.value,
            internal_listener=security.sasl,
        )
        layout.directory.mkdir(parents=True, exist_ok=True)
        made = None
        if placement is not None:
            made = placement([n.node_id for n in layout.nodes], layout.directory)
        try:
            cls._write_nodes(layout, overrides or {}, made)
        except BaseException:
            if made is not None:
                made.destroy()
            raise
        # cluster.json last: its presence means "fully created".
        layout.save()
        return cls(layout, made)

    @staticmethod
    def _write_nodes(
        layout: ClusterLayout, overrides: Mapping[str, str], placement: NodePlacement | None
    ) -> None:
        secret = secrets.token_urlsafe(32)
        write_private(layout.secret_path(), secret + "\n")
        mode = SecurityMode(layout.security)
        if mode is not SecurityMode.PLAINTEXT:
            create_certificates(layout)
        for node in layout.nodes:
            node.directory.mkdir(parents=True, exist_ok=True)
            secured = {**node_security_properties(layout, node, mode), **overrides}
            props = node_properties(layout, node, secret, secured)
            if placement is not None:
                props = placement.rewrite_addresses(props, layout)
            write_private(node.config_path, render_properties(props, node))
            settings = load_node_config(str(node.config_path))
            format_directories(
                settings.storage_dirs(), cluster_id=layout.cluster_id, node_id=node.node_id
            )

    @classmethod
    def open(
        cls, directory: str | os.PathLike[str], placement: NodePlacement | None = None
    ) -> LocalCluster:
        """Attach to the cluster in ``directory`` (with the placement it was created with)."""
        return cls(ClusterLayout.load(directory), placement)

    # --- addresses ------------------------------------------------------------------------------

    @property
    def directory(self) -> Path:
        return self.layout.directory

    @property
    def cluster_id(self) -> str:
        return self.layout.cluster_id

    @property
    def node_ids(self) -> list[int]:
        return [n.node_id for n in self.layout.nodes]

    @property
    def controller_ids(self) -> list[int]:
        return [n.node_id for n in self.layout.controllers]

    @property
    def broker_ids(self) -> list[int]:
        return [n.node_id for n in self.layout.brokers]

    def bootstrap_controllers(self) -> list[str]:
        if self.placement is not None:
            return [self.controller_address(n.node_id) for n in self.layout.controllers]
        return self.layout.bootstrap_controllers()

    def bootstrap_servers(self) -> list[str]:
        if self.placement is not None:
            return [f"{self.host_of(n.node_id)}:{n.broker_port}" for n in self.layout.brokers]
        return self.layout.bootstrap_servers()

    def host_of(self, node_id: int) -> str:
        """The address node ``node_id`` listens on (the placement's, if there is one)."""
        if self.placement is not None:
            return self.placement.address(node_id)
        return self.layout.host

    def node(self, node_id: int) -> NodeLayout:
        return self.layout.node(node_id)

    def config_path(self, node_id: int) -> Path:
        return self.node(node_id).config_path

    def controller_address(self, node_id: int) -> str:
        node = self.node(node_id)
        if node.controller_port is None:
            raise KeyError(f"node {node_id} is not a controller")
        return f"{self.host_of(node_id)}:{node.controller_port}"

    def client(
        self, timeout_s: float = 5.0, controllers: Iterable[int] | None = None
    ) -> ControllerClient:
        """A control-plane client bootstrapped from every controller (or just ``controllers``)."""
        if controllers is None:
            bootstrap = self.bootstrap_controllers()
        else:
            bootstrap = [self.controller_address(i) for i in controllers]
        credentials = None
        if self.layout.security != SecurityMode.PLAINTEXT.value:
            # The control plane requires mutual TLS: present the admin certificate.
            credentials = channel_credentials(
                from_props(SecurityConfig, admin_control_plane_properties(self.layout))
            )
        return ControllerClient(",".join(bootstrap), timeout_s, credentials=credentials)

    # --- processes ------------------------------------------------------------------------------

    def pid(self, node_id: int) -> int | None:
        """The pid of the running node process, or None if it is not running: a process this
        object started, else the pid the node reports about itself in its status file (so a
        node restarted by hand with its own command line counts), else the pid file; each
        only if that process is alive and runs this node's config."""
        node = self.node(node_id)
        child = self._children.get(node_id)
        if child is not None:
            if child.poll() is None:
                return child.pid
            del self._children[node_id]
        config = str(node.config_path)
        reported = read_status(str(node.status_path)) or {}
        candidates = []
        if reported.get("state") in ("running", "stopping"):
            candidates.append(reported.get("pid"))
        candidates.append(processes.read_pid(str(node.pid_path)))
        for pid in candidates:
            if isinstance(pid, int) and processes.is_node_process(pid, config):
                return pid
        return None

    def is_running(self, node_id: int) -> bool:
        return self.pid(node_id) is not None

    def is_paused(self, node_id: int) -> bool:
        pid = self.pid(node_id)
        return pid is not None and processes.process_state(pid) == "T"

    def running_ids(self) -> list[int]:
        return [i for i in self.node_ids if self.is_running(i)]

    def start_node(self, node_id: int) -> int:
        """Start ``node_id`` unless it runs; return its pid."""
        pid = self.pid(node_id)
        if pid is not None:
            return pid
        node = self.node(node_id)
        # A stale status file from the previous run must not pass for this run's.
        node.status_path.unlink(missing_ok=True)
        if self.placement is not None:
            child = self.placement.spawn_node(node_id, node)
        else:
            child = processes.spawn_node(
                str(node.config_path), str(node.log_path), str(node.pid_path), str(node.status_path)
            )
        self._children[node_id] = child
        return child.pid

    def start(self, node_ids: Iterable[int] | None = None) -> None:
        """Start the given nodes (default: all), controllers first."""
        wanted = set(self.node_ids if node_ids is None else node_ids)
        for node in sorted(self.layout.nodes, key=lambda n: (not n.is_controller, n.node_id)):
            if node.node_id in wanted:
                self.start_node(node.node_id)

    def kill(self, node_id: int, sig: int = signal.SIGKILL) -> None:
        """Send ``sig`` to the node; for SIGKILL also wait until it is gone (and reaped)."""
        pid = self.pid(node_id)
        if pid is None:
            raise ClusterError(f"node {node_id} is not running")
        processes.send_signal(pid, sig)
        if sig == signal.SIGKILL:
            processes.wait_gone([(pid, str(self.config_path(node_id)))], 10.0, self._by_pid())

    def pause(self, node_id: int) -> None:
        self.kill(node_id, signal.SIGSTOP)

    def resume(self, node_id: int) -> None:
        self.kill(node_id, signal.SIGCONT)

    def stop_node(self, node_id: int, grace_s: float = DEFAULT_STOP_GRACE_S) -> bool:
        """SIGTERM (SIGKILL after ``grace_s``); True if it stopped within the grace."""
        pid = self.pid(node_id)
        if pid is None:
            return True
        killed = processes.stop_processes(
            [(pid, str(self.config_path(node_id)))], grace_s, self._by_pid()
        )
        self.pid(node_id)  # reap our handle
        return not killed

    def restart(self, node_id: int, grace_s: float = DEFAULT_STOP_GRACE_S) -> int:
        self.stop_node(node_id, grace_s)
        return self.start_node(node_id)

    def down(self, grace_s: float = DEFAULT_STOP_GRACE_S) -> list[int]:
        """Stop every node: brokers first (their controlled shutdown needs the controllers),
        then controllers. Returns the ids that had to be SIGKILLed."""
        killed: list[int] = []
        for group in (
            self.broker_ids,
            [i for i in self.controller_ids if i not in self.broker_ids],
        ):
            targets = []
            for node_id in group:
                pid = self.pid(node_id)
                if pid is not None:
                    targets.append((pid, str(self.config_path(node_id)), node_id))
            stubborn = processes.stop_processes(
                [(p, c) for p, c, _ in targets], grace_s, self._by_pid()
            )
            killed.extend(i for p, _, i in targets if p in stubborn)
        for node_id in list(self._children):
            self.pid(node_id)
        return killed

    def close(self) -> None:
        """Kill every node at once (test teardown: nothing is left behind, fast)."""
        for node_id in self.node_ids:
            pid = self.pid(node_id)
            if pid is not None:
                processes.send_signal(pid, signal.SIGKILL)
        for node_id in self.node_ids:
            node = self.node(node_id)
            pid = processes.read_pid(str(node.pid_path))
            if pid is not None:
                processes.wait_gone([(pid, str(node.config_path))], 10.0, self._by_pid())
        for child in self._children.values():
            child.wait(10)
        self._children.clear()
        if self.placement is not None:
            self.placement.destroy()

    def _by_pid(self) -> dict[int, subprocess.Popen[bytes]]:
        return {c.pid: c for c in self._children.values()}

    # --- growing the cluster --------------------------------------------------------------------

    def add_broker(self, overrides: Mapping[str, str] | None = None) -> int:
        """Add one broker node (the next id after the highest broker id) to the layout, write
        its config and format its storage; start it with :meth:`start_node`. Its settings are
        those of the existing broker with the lowest id (same overrides), with its own id,
        port and directories, updated by ``overrides``. Returns the new node id.
        Not available with a placement (it was made for the nodes of the creation)."""
        self._check_growable("add_broker")
        brokers = self.layout.brokers
        if len(brokers) >= MAX_BROKERS:
            raise ClusterError(f"a local cluster has at most {MAX_BROKERS} brokers")
        node_id = max((n.node_id for n in brokers), default=BROKER_ID_BASE - 1) + 1
        port, metrics_port = self._unused_ports(2)
        node = NodeLayout(
            node_id,
            ("broker",),
            self.layout.directory / f"node-{node_id}",
            broker_port=port,
            metrics_port=metrics_port,
        )
        self._add_node(node, brokers[0] if brokers else None, dict(overrides or {}))
        return node_id

    def add_controller(self, overrides: Mapping[str, str] | None = None) -> int:
        """Add one controller node (the next id after the highest controller id) to the
        layout, write its config and format it; it is not a voter. Started with
        :meth:`start_node`, it follows the quorum as an observer until ``kraftlog quorum
        add-controller --config`` its config makes it one. Its config lists the controllers
        of the layout as ``controller.quorum.voters`` (where it finds the quorum) and its
        own ``controller.quorum.raft.address``. Returns the new node id."""
        self._check_growable("add_controller")
        layout = self.layout
        controllers = [n for n in layout.controllers if not n.is_broker]
        if len(layout.controllers) >= MAX_CONTROLLERS or not controllers:
            raise ClusterError(
                f"a local cluster has 1 to {MAX_CONTROLLERS} controllers, added ones included, "
                "and adds them beside dedicated controllers only"
            )
        node_id = max(n.node_id for n in layout.controllers) + 1
        if any(n.node_id == node_id for n in layout.nodes):
            raise ClusterError(f"node id {node_id} is taken: no room for another controller")
        raft_port, controller_port, metrics_port = self._unused_ports(3)
        node = NodeLayout(
            node_id,
            ("controller",),
            layout.directory / f"node-{node_id}",
            raft_port=raft_port,
            controller_port=controller_port,
            metrics_port=metrics_port,
        )
        joining = {RAFT_ADDRESS_KEY: f"{layout.host}:{raft_port}", **(overrides or {})}
        self._add_node(node, controllers[0], joining)
        return node_id

    def _check_growable(self, what: str) -> None:
        if self.placement is not None:
            raise ClusterError(f"{what} is not supported for a cluster with a placement")
        if self.layout.security != SecurityMode.PLAINTEXT.value:
            # Every node's super.users names the nodes' certificates as they were made.
            raise ClusterError(f"{what} is not supported for a secure cluster")

    def _unused_ports(self, count: int) -> list[int]:
        layout = self.layout
        used = {
            p
            for n in layout.nodes
            for p in (n.raft_port, n.controller_port, n.broker_port, n.metrics_port)
            if p
        }
        return [p for p in free_ports(len(used) + count, host=layout.host) if p not in used][:count]

    def _add_node(
        self, node: NodeLayout, template: NodeLayout | None, overrides: dict[str, str]
    ) -> None:
        """Write ``node``'s config (``template``'s settings, minus what is node-specific, with
        the node's own and ``overrides``), format it and save the layout with it."""
        layout = self.layout
        props: dict[str, str] = {}
        if template is not None:
            props = {
                k: v
                for k, v in load_properties(str(template.config_path)).items()
                if k not in _NODE_SPECIFIC_KEYS
            }
        secret = layout.secret_path().read_text(encoding="utf-8").strip()
        props = {**node_properties(layout, node, secret, props), **overrides}
        node.directory.mkdir(parents=True, exist_ok=True)
        write_private(node.config_path, render_properties(props, node))
        settings = load_node_config(str(node.config_path))
        format_directories(
            settings.storage_dirs(), cluster_id=layout.cluster_id, node_id=node.node_id
        )
        self.layout = ClusterLayout(
            layout.directory, layout.cluster_id, layout.host, (*layout.nodes, node), layout.security
        )
        self.layout.save()

    # --- config edits ---------------------------------------------------------------------------

    def update_config(self, node_id: int, changes: Mapping[str, str | None]) -> None:
        """Set (or, with None, remove) keys in a node's config; takes effect on its next start."""
        node = self.node(node_id)
        props = load_properties(str(node.config_path))
        for key, value in changes.items():
            if value is None:
                props.pop(key, None)
            else:
                props[key] = value
        write_private(node.config_path, render_properties(props, node))

    def node_status(self, node_id: int) -> dict[str, Any] | None:
        """The status the running node last wrote (see deploy.node_status), or None."""
        return read_status(str(self.node(node_id).status_path))

    def broker_status(self, node_id: int) -> dict[str, Any] | None:
        """The broker component's part of the node's status, or None."""
        doc = self.node_status(node_id)
        if doc is None or doc.get("state") != "running":
            return None
        broker = doc.get("components", {}).get("broker")
        return broker if isinstance(broker, dict) else None

    # --- logs -----------------------------------------------------------------------------------

    def log_tail(self, node_id: int, max_lines: int = _LOG_TAIL_LINES) -> str:
        path = self.node(node_id).log_path
        try:
            with open(path, "rb") as f:
                f.seek(0, os.SEEK_END)
                size = f.tell()
                f.seek(max(0, size - 64 * 1024))
                text = f.read().decode("utf-8", "replace")
        except OSError:
            return f"(no log at {path})"
        return "\n".join(text.splitlines()[-max_lines:])

    # --- readiness and status -------------------------------------------------------------------

    def quorum_leader_id(self, timeout_s: float = _PROBE_TIMEOUT_S) -> int | None:
        """The Raft leader as the first voter that answers sees it (None: no leader known)."""
        running = [i for i in self.controller_ids if self.is_running(i) and not self.is_paused(i)]
        if not running:
            return None
        with self.client(timeout_s, running) as client:
            leader = client.quorum_status().get("leader_id")
        return int(leader) if leader is not None else None

    def active_controller_id(self, timeout_s: float = 10.0) -> int:
        """The active controller (the one that answers DescribeCluster), waiting for one."""

        def probe() -> int | None:
            with self.client(_PROBE_TIMEOUT_S) as client:
                return client.describe_cluster().controller_id

        return wait_until(probe, timeout_s, "an active controller")

    def finish_security(self, timeout_s: float = DEFAULT_READY_TIMEOUT_S) -> dict[str, Path]:
        """For a secure cluster that is up: create the SCRAM user ``admin`` (SASL modes),
        wait until every broker has applied it, and write the client settings files
        (deploy/secure_cluster.py); their paths by name. Once done the files are kept and
        returned as they are (the password lives in them). Nothing for a plaintext cluster."""
        mode = SecurityMode(self.layout.security)
        if mode is SecurityMode.PLAINTEXT:
            return {}
        existing = client_files(self.layout)
        if all(p.exists() for p in existing.values()):
            return existing
        password = new_admin_password() if mode.sasl else None
        with self.client(timeout_s) as client:
            if password is not None:
                results = set_scram_password(
                    client,
                    ADMIN_USER,
                    password,
                    [ScramMechanism.SCRAM_SHA_512],
                    iterations=SCRAM_ITERATIONS,
                )
                failed = [r for r in results if r.error_code]
                if failed:
                    raise ClusterError(f"creating the admin user failed: {failed}")
            target = client.describe_cluster().metadata_offset

        def applied() -> bool:
            for broker_id in self.broker_ids:
                broker = (self.node_status(broker_id) or {}).get("components", {}).get("broker")
                if not broker or broker.get("metadata_offset", -1) < target:
                    return False
            return True

        wait_until(applied, timeout_s, "every broker to apply the admin user")
        return write_client_files(self.layout, mode, password)

    def wait_ready(self, timeout_s: float = DEFAULT_READY_TIMEOUT_S) -> None:
        """Wait until every node runs, the quorum has an active controller, and every broker is
        registered and unfenced. Raises ClusterError with the failing node's log tail."""
        if self.placement is not None and not self.placement.reachable():
            self.placement.wait_ready_remotely(self.directory, timeout_s)
            return
        deadline = time.monotonic() + timeout_s
        reason = "not probed yet"
        culprit: int | None = None
        with self.client(_PROBE_TIMEOUT_S) as client:
            while True:
                for node_id in self.node_ids:
                    if not self.is_running(node_id):
                        raise ClusterError(
                            f"node {node_id} exited during startup; last lines of "
                            f"{self.node(node_id).log_path}:\n{self.log_tail(node_id)}"
                        )
                ready, reason, culprit = self._probe_ready(client)
                if ready:
                    return
                if time.monotonic() >= deadline:
                    break
                time.sleep(_POLL_INTERVAL_S)
        culprit = culprit if culprit is not None else self.controller_ids[0]
        raise ClusterError(
            f"cluster at {self.directory} not ready after {timeout_s:.0f} s: {reason}; last "
            f"lines of {self.node(culprit).log_path}:\n{self.log_tail(culprit)}"
        )

    def _probe_ready(self, client: ControllerClient) -> tuple[bool, str, int | None]:
        try:
            cluster = client.describe_cluster()
        except Exception as e:  # any transport or routing error means "not yet"
            return False, f"no controller answers ({type(e).__name__}: {e})", None
        if cluster.controller_id is None:
            return False, "the quorum has no active controller", None
        brokers = {b.broker_id: b for b in cluster.brokers}
        for broker_id in self.broker_ids:
            b = brokers.get(broker_id)
            if b is None:
                return False, f"broker {broker_id} has not registered", broker_id
            if b.fenced:
                return False, f"broker {broker_id} is fenced", broker_id
        return True, "ready", None

    def metrics_endpoint(self, node_id: int) -> tuple[str, int] | None:
        """The node's Prometheus endpoint (host, port) as its config sets it
        (``metrics.port``, which may have been changed since the cluster was made), None
        when it serves none."""
        try:
            props = load_properties(str(self.node(node_id).config_path))
            port = int(props.get("metrics.port", "-1"))
        except (OSError, ConfigError, ValueError):
            return None
        if port < 0:
            return None
        return props.get("metrics.host", self.layout.host), port

    def metrics_url(self, node_id: int) -> str | None:
        endpoint = self.metrics_endpoint(node_id)
        return None if endpoint is None else f"http://{endpoint[0]}:{endpoint[1]}/metrics"

    def status(self, timeout_s: float = _PROBE_TIMEOUT_S) -> dict[str, Any]:
        """Every node (id, roles, pid, state, listeners) plus what the controllers say: the
        quorum leader and epoch, and each broker's epoch and fencing. JSON-serialisable."""
        running_controllers = [i for i in self.controller_ids if self.is_running(i)]
        if running_controllers:
            with self.client(timeout_s, running_controllers) as client:
                view = probe_controllers(client)
        else:
            view = ControllerView(None, None, "no controller is running")
        quorum = view.quorum
        brokers = {b.broker_id: b for b in view.cluster.brokers} if view.cluster else {}
        nodes = []
        for node in self.layout.nodes:
            pid = self.pid(node.node_id)
            state = "stopped"
            if pid is not None:
                reported = read_status(str(node.status_path)) or {}
                if processes.process_state(pid) == "T":
                    state = "paused"
                elif reported.get("pid") == pid and reported.get("state") == "stopping":
                    state = "stopping"
                else:
                    state = "running"
            listeners: dict[str, str] = {}
            if node.controller_port is not None:
                listeners["CONTROLLER"] = f"{self.layout.host}:{node.controller_port}"
            if node.broker_port is not None:
                listeners["PLAINTEXT"] = f"{self.layout.host}:{node.broker_port}"
            entry: dict[str, Any] = {
                "id": node.node_id,
                "roles": list(node.roles),
                "pid": pid,
                "state": state,
                "listeners": listeners,
                "config": str(node.config_path),
                "log": str(node.log_path),
            }
            if node.raft_port is not None:
                entry["raft_address"] = f"{self.layout.host}:{node.raft_port}"
            metrics = self.metrics_url(node.node_id)
            if metrics is not None:
                entry["metrics"] = metrics
            b = brokers.get(node.node_id)
            if node.is_broker:
                entry["broker_epoch"] = b.epoch if b is not None else None
                entry["fenced"] = b.fenced if b is not None else None
            nodes.append(entry)
        return {
            "cluster_id": self.cluster_id,
            "directory": str(self.directory),
            "bootstrap_servers": self.bootstrap_servers(),
            "bootstrap_controllers": self.bootstrap_controllers(),
            "quorum_leader_id": quorum["leader_id"] if quorum else None,
            "quorum_epoch": quorum["epoch"] if quorum else None,
            "quorum": quorum,
            "nodes": nodes,
            "error": view.error,
        }


def node_properties(
    layout: ClusterLayout, node: NodeLayout, secret: str, overrides: Mapping[str, str]
) -> dict[str, str]:
    """The server.properties of one node of a local cluster."""
    host = layout.host
    props: dict[str, str] = {
        "process.roles": ",".join(node.roles),
        "node.id": str(node.node_id),
    }
    listeners = []
    if node.is_controller:
        listeners.append(f"CONTROLLER://{host}:{node.controller_port}")
    if node.is_broker:
        listeners.append(f"PLAINTEXT://{host}:{node.broker_port}")
        props["advertised.listeners"] = f"PLAINTEXT://{host}:{node.broker_port}"
    props["listeners"] = ",".join(listeners)
    props["controller.quorum.bootstrap.servers"] = ",".join(layout.bootstrap_controllers())
    if node.is_controller:
        props["controller.quorum.voters"] = layout.voters()
        props["controller.quorum.secret"] = secret
        props["metadata.log.dir"] = str(node.metadata_dir)
    props["log.dirs"] = str(node.data_dir)
    if node.metrics_port is not None:
        props["metrics.port"] = str(node.metrics_port)
    # Kafka's default of 3 replicas for __consumer_offsets would leave groups without a
    # coordinator (COORDINATOR_NOT_AVAILABLE) in a cluster of fewer brokers.
    props["offsets.topic.replication.factor"] = str(
        max(1, min(OFFSETS_TOPIC_MAX_REPLICATION_FACTOR, len(layout.brokers)))
    )
    props.update(LOCAL_CLUSTER_DEFAULTS)
    props.update(overrides)
    return props


def render_properties(props: Mapping[str, str], node: NodeLayout) -> str:
    keys = [k for k in _KEY_ORDER if k in props]
    keys += sorted(k for k in props if k not in _KEY_ORDER)
    lines = [
        f"# kraftlog local cluster: node {node.node_id} ({', '.join(node.roles)})",
        "# written by `kraftlog cluster up`; holds the cluster secret (mode 0600)",
    ]
    lines += [f"{k}={props[k]}" for k in keys]
    return "\n".join(lines) + "\n"
