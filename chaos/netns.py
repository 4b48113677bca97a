"""NetnsTopology: network namespaces that put each node of a LocalCluster on its own address,
so the chaos suite (and partition tests) can cut links between nodes with iptables. Root only;
iproute2 and iptables needed. A :class:`deploy.local_cluster.NodePlacement`:
``LocalCluster.create(dir, placement=netns_placement("name"))`` makes the namespaces for the
new layout, :func:`open_cluster` attaches to such a cluster from any process (for instance a
client inside the hub), and ``LocalCluster.close`` deletes them with every rule.

Thread-safety: none; one topology per cluster, driven from one thread.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from deploy import processes
from deploy.cluster_layout import ClusterLayout, NodeLayout
from deploy.local_cluster import ClusterError, LocalCluster, PlacementFactory

NETNS_FILE = "netns.json"
# Node k (1-based, in layout order) is 10.200.k.2 in its namespace; the hub end is 10.200.k.1.
# The addresses exist only inside the namespaces this class creates (no physical interface).
_NETNS_SUBNET = "10.200"
_NETNS_INSIDE_ENV = "KRAFTLOG_NETNS"
_IP_TIMEOUT_S = 10.0
# The client namespace (for chaos workloads) uses index 0: 10.200.0.2, hub end 10.200.0.1.
CLIENT_ENDPOINT = -1
_CLIENT_INDEX = 0


class NetnsTopology:
    """Network namespaces for partition tests (root only; iproute2 and iptables needed).

    Layout, for a topology named ``N`` and nodes 1..k (layout order)::

        hub namespace  N        v1 10.200.1.1/24 ... vk 10.200.k.1/24, ip_forward on,
                                iptables FORWARD rules = the partitions
        node namespace N-i      lo, eth0 10.200.i.2/24, default route via 10.200.i.1
        client namespace N-c    lo, eth0 10.200.0.2/24, default route via 10.200.0.1

    Why a namespace per node and not 127.0.0.N inside one namespace: on loopback the kernel
    picks 127.0.0.1 as the source of every outgoing connection whatever address the process
    listens on, so iptables cannot tell the nodes apart by source; here each node's packets
    carry its own address, and the hub routes (and filters) between them. Each pair of nodes
    is cut exactly; connections survive a heal (DROP, not reset).

    The client namespace is an endpoint like a node (:data:`CLIENT_ENDPOINT` in place of a
    node id): a process in it reaches every node through the hub, so the link client -> node
    can be cut like any node pair (the chaos suite runs its workloads there).
    :meth:`block_one_way` cuts one direction only; :meth:`insert_rule` / :meth:`delete_rule`
    add other hub rules (random loss, redirection to a proxy); :meth:`heal_all` flushes the
    filter FORWARD chain and the nat PREROUTING chain. ``node_env`` adds environment
    variables to a node's next start (the chaos clock-skew fault uses libfaketime's).

    State is saved to ``netns.json`` in the cluster directory so ``LocalCluster.open`` (e.g.
    in a client subprocess inside the hub) finds the addresses.
    """

    def __init__(self, name: str, node_ids: list[int]) -> None:
        if not name or len(name) > 12 or not name.replace("-", "").isalnum():
            raise ValueError(f"network namespace name {name!r}: 1-12 letters, digits or '-'")
        if len(node_ids) > 250:
            raise ValueError("at most 250 nodes in network-namespace mode")
        self.name = name
        self._index = {node_id: k for k, node_id in enumerate(node_ids, start=1)}
        self.node_env: dict[int, dict[str, str]] = {}

    def _k(self, node_id: int) -> int:
        return _CLIENT_INDEX if node_id == CLIENT_ENDPOINT else self._index[node_id]

    def address(self, node_id: int) -> str:
        """The address of a node (or of the client namespace: :data:`CLIENT_ENDPOINT`)."""
        return f"{_NETNS_SUBNET}.{self._k(node_id)}.2"

    def hub_address(self, node_id: int) -> str:
        """The hub's address on the link to ``node_id``: what that node routes through (a
        proxy listening in the hub on it is reachable from that node)."""
        return f"{_NETNS_SUBNET}.{self._k(node_id)}.1"

    def node_namespace(self, node_id: int) -> str:
        if node_id == CLIENT_ENDPOINT:
            return self.client_namespace
        return f"{self.name}-{self._index[node_id]}"

    @property
    def client_namespace(self) -> str:
        return f"{self.name}-c"

    def _ip(self, *argv: str, ns: str | None = None) -> None:
        cmd = (["ip", "netns", "exec", ns] if ns else []) + list(argv)
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=_IP_TIMEOUT_S)
        if done.returncode != 0:
            raise ClusterError(f"{' '.join(cmd)} failed: {done.stderr.strip()}")

    def create(self) -> None:
        try:
            self._ip("ip", "netns", "add", self.name)
            self._ip("ip", "link", "set", "lo", "up", ns=self.name)
            self._ip("sysctl", "-qw", "net.ipv4.ip_forward=1", ns=self.name)
            endpoints = {CLIENT_ENDPOINT: _CLIENT_INDEX, **self._index}
            for node_id, k in endpoints.items():
                ns = self.node_namespace(node_id)
                self._ip("ip", "netns", "add", ns)
                self._ip("ip", "link", "set", "lo", "up", ns=ns)
                self._ip(
                    "ip",
                    "link",
                    "add",
                    f"v{k}",
                    "type",
                    "veth",
                    "peer",
                    "name",
                    "eth0",
                    "netns",
                    ns,
                    ns=self.name,
                )
                self._ip(
                    "ip", "addr", "add", f"{_NETNS_SUBNET}.{k}.1/24", "dev", f"v{k}", ns=self.name
                )
                self._ip("ip", "link", "set", f"v{k}", "up", ns=self.name)
                self._ip("ip", "addr", "add", f"{self.address(node_id)}/24", "dev", "eth0", ns=ns)
                self._ip("ip", "link", "set", "eth0", "up", ns=ns)
                self._ip("ip", "route", "add", "default", "via", f"{_NETNS_SUBNET}.{k}.1", ns=ns)
        except BaseException:
            self.destroy()
            raise

    def destroy(self) -> None:
        """Delete every namespace (and so every veth and rule); missing ones are fine."""
        for node_id in [CLIENT_ENDPOINT, *self._index]:
            subprocess.run(
                ["ip", "netns", "delete", self.node_namespace(node_id)],
                capture_output=True,
                timeout=_IP_TIMEOUT_S,
            )
        subprocess.run(
            ["ip", "netns", "delete", self.name], capture_output=True, timeout=_IP_TIMEOUT_S
        )

    def _rules(self, a: int, b: int) -> list[list[str]]:
        return [
            ["FORWARD", "-s", self.address(x), "-d", self.address(y), "-j", "DROP"]
            for x, y in ((a, b), (b, a))
        ]

    def block(self, a: int, b: int) -> None:
        for rule in self._rules(a, b):
            self._ip("iptables", "-I", *rule, ns=self.name)

    def heal(self, a: int, b: int) -> None:
        for rule in self._rules(a, b):
            subprocess.run(
                ["ip", "netns", "exec", self.name, "iptables", "-D", *rule],
                capture_output=True,
                timeout=_IP_TIMEOUT_S,
            )

    def block_one_way(self, src: int, dst: int) -> None:
        """Drop the packets ``src`` sends to ``dst`` (``dst`` -> ``src`` still flows, so TCP
        handshakes and acknowledgements fail one way only, as in an asymmetric partition)."""
        self.insert_rule(self._rules(src, dst)[0])

    def heal_one_way(self, src: int, dst: int) -> None:
        self.delete_rule(self._rules(src, dst)[0])

    def insert_rule(self, rule: list[str], table: str = "filter") -> None:
        """``iptables -t table -I <rule>`` in the hub (``rule`` starts with the chain)."""
        self._ip("iptables", "-t", table, "-I", *rule, ns=self.name)

    def delete_rule(self, rule: list[str], table: str = "filter") -> None:
        """Remove one copy of ``rule``; a rule that is not there is fine (heal is idempotent)."""
        subprocess.run(
            ["ip", "netns", "exec", self.name, "iptables", "-t", table, "-D", *rule],
            capture_output=True,
            timeout=_IP_TIMEOUT_S,
        )

    def heal_all(self) -> None:
        self._ip("iptables", "-F", "FORWARD", ns=self.name)
        self._ip("iptables", "-t", "nat", "-F", "PREROUTING", ns=self.name)

    def run(self, argv: list[str], timeout_s: float) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["ip", "netns", "exec", self.name, *argv],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            env=self._env(),
        )

    def reachable(self) -> bool:
        """True inside the namespaces this topology made (the hub, a node, the client)."""
        return os.environ.get(_NETNS_INSIDE_ENV) == self.name

    def wait_ready_remotely(self, directory: Path, timeout_s: float) -> None:
        """Wait for the cluster from the hub, the only place every node is reachable from."""
        code = (
            "import sys; from chaos.netns import open_cluster; "
            f"open_cluster(sys.argv[1]).wait_ready({timeout_s!r})"
        )
        done = self.run([sys.executable, "-c", code, str(directory)], timeout_s + 30)
        if done.returncode != 0:
            raise ClusterError(f"cluster at {directory} not ready:\n{done.stderr[-4000:]}")

    def _env(self, node_id: int | None = None) -> dict[str, str]:
        env = dict(os.environ)
        if node_id is not None:
            env.update(self.node_env.get(node_id, {}))
        root = str(Path(__file__).resolve().parent.parent)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
        env[_NETNS_INSIDE_ENV] = self.name
        env["PYTHONUNBUFFERED"] = "1"
        return env

    def spawn_node(self, node_id: int, node: NodeLayout) -> subprocess.Popen[bytes]:
        """Start a node inside its namespace (``ip netns exec`` execs the node, so the pid is
        the node's); write its pid file."""
        cmd = ["ip", "netns", "exec", self.node_namespace(node_id)]
        cmd += processes.node_command(str(node.config_path), str(node.status_path))
        with open(node.log_path, "ab") as log:
            proc = subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                cwd=str(node.directory),
                env=self._env(node_id),
            )
        tmp = str(node.pid_path) + ".tmp"
        with open(tmp, "w", encoding="ascii") as f:
            f.write(f"{proc.pid}\n")
        os.replace(tmp, node.pid_path)
        return proc

    def rewrite_addresses(self, props: Mapping[str, str], layout: ClusterLayout) -> dict[str, str]:
        """Point every ``host:port`` of the layout at the address of the node owning the port."""
        owner = {}
        for n in layout.nodes:
            for port in (n.raft_port, n.controller_port, n.broker_port):
                if port is not None:
                    owner[f"{layout.host}:{port}"] = f"{self.address(n.node_id)}:{port}"
        out = {}
        for key, value in props.items():
            for old, new in owner.items():
                value = value.replace(old + ",", new + ",")
                if value.endswith(old):
                    value = value[: -len(old)] + new
            out[key] = value
        return out

    def save(self, directory: Path) -> None:
        doc = {"name": self.name, "nodes": list(self._index)}
        (directory / NETNS_FILE).write_text(json.dumps(doc) + "\n", encoding="utf-8")

    @classmethod
    def load(cls, directory: Path) -> NetnsTopology | None:
        try:
            doc = json.loads((Path(directory) / NETNS_FILE).read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        return cls(str(doc["name"]), [int(i) for i in doc["nodes"]])


def netns_placement(name: str) -> PlacementFactory:
    """A placement factory for ``LocalCluster.create``: the namespaces named after ``name`` for
    the new layout's nodes, created and recorded in the cluster directory."""

    def make(node_ids: list[int], directory: Path) -> NetnsTopology:
        topology = NetnsTopology(name, node_ids)
        topology.create()
        topology.save(directory)
        return topology

    return make


def open_cluster(directory: str | os.PathLike[str]) -> LocalCluster:
    """Attach to a cluster created with :func:`netns_placement` (from the hub, a node's
    namespace or the host)."""
    topology = NetnsTopology.load(Path(directory))
    if topology is None:
        raise ClusterError(f"{directory} was not created in network-namespace mode")
    return LocalCluster.open(directory, topology)
