"""ChaosCluster: a LocalCluster in network namespaces whose every ordered link can be cut,
made lossy or slowed down, plus the disk and clock hooks the nemeses need.

Topology (see :class:`chaos.netns.NetnsTopology`)::

    client namespace <name>-c  10.200.0.2 ----+
    node namespace   <name>-1  10.200.1.2 ----+---- hub namespace <name>: routes between them;
    ...                                       |     iptables here = the faults; the
    node namespace   <name>-k  10.200.k.2 ----+     Toxiproxy-compatible server runs here

Why one namespace per node, not nodes on 127.0.0.x in one namespace: on
loopback the kernel picks 127.0.0.1 as the source address of every connection whatever the
listening address, so iptables cannot tell which node sent a packet. With a namespace per node
each packet carries its sender's address and the hub filters exactly one ordered pair.

Faults on a link ``src -> dst`` (endpoints are node ids, or :data:`CLIENT` for the workloads):

- cut: iptables DROP in the hub's FORWARD chain (one way or both). Packets vanish, TCP
  connections stall and survive the heal, as in a real partition.
- lossy: DROP with ``-m statistic --mode random --probability p`` (``tc netem`` is absent here).
- slow (latency / bandwidth / slicer / timeout toxics): a proxy per (src, dst, port) on the
  Toxiproxy-compatible server, driven only through the toxiproxy-python client (so a real
  toxiproxy-server can replace ours). The link is routed through the proxy without touching
  any node's configuration: a nat PREROUTING DNAT rule in the hub sends new connections from
  ``src`` to ``dst:port`` to the proxy listening on the hub's address on src's link, and a
  tcp-reset REJECT in FORWARD breaks the direct connections that already exist so that both
  sides reconnect through the proxy. (Routing by configuration — giving a node the proxy's
  address in listeners / voters / bootstrap — was rejected: advertised addresses and the
  Raft voter set are shared by every peer, so it can only slow all traffic into a node, never
  one ordered pair, and it needs a restart.)

Every rule lives in the hub namespace, every process in a namespace of this cluster, the
full-disk tmpfs is mounted with the source name :data:`TMPFS_SOURCE`; so :meth:`close`, and
``kraftlog chaos cleanup`` after a crash (:func:`cleanup_leftovers`), remove all of it.

Thread-safety: none; the runner drives one ChaosCluster from its nemesis thread.
"""

from __future__ import annotations

import ctypes
import errno
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chaos.netns import CLIENT_ENDPOINT, NetnsTopology, netns_placement
from deploy.local_cluster import ClusterError, LocalCluster

CLIENT = CLIENT_ENDPOINT
# Namespaces of chaos clusters are named NAMESPACE_PREFIX + digits; cleanup matches the prefix.
NAMESPACE_PREFIX = "klc"
# The "device" name of every full-disk tmpfs mount (shows in /proc/mounts; cleanup matches it).
TMPFS_SOURCE = "kraftlog-chaos"
TOXIPROXY_API_PORT = 8474
_CLONE_NEWNET = 0x40000000
_CMD_TIMEOUT_S = 10.0
_TOXIPROXY_START_TIMEOUT_S = 20.0
_FILL_CHUNK_BYTES = 1024 * 1024
# libfaketime's multi-threaded build: the nodes run threads (gRPC, Raft, fetchers).
LIBFAKETIME_PATHS = (
    "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1",
    "/usr/lib/aarch64-linux-gnu/faketime/libfaketimeMT.so.1",
    "/usr/lib/faketime/libfaketimeMT.so.1",
)


class ChaosSetupError(Exception):
    """The chaos cluster cannot be built here (not root, a tool missing, a command failed)."""


def missing_requirements() -> list[str]:
    """What this machine lacks for a chaos cluster (empty when everything is there)."""
    missing = []
    if os.geteuid() != 0:
        missing.append("root (network namespaces, iptables, mount)")
    for tool in ("ip", "iptables", "mount", "umount"):
        if shutil.which(tool) is None:
            missing.append(tool)
    return missing


def libfaketime_path() -> str | None:
    return next((p for p in LIBFAKETIME_PATHS if os.path.exists(p)), None)


def current_network_namespace_fd() -> int:
    """An open descriptor of the calling thread's network namespace (to return to it with
    :func:`set_network_namespace_fd`); the caller closes it."""
    return os.open("/proc/thread-self/ns/net", os.O_RDONLY)


def set_network_namespace_fd(fd: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.setns(fd, _CLONE_NEWNET) != 0:
        raise ChaosSetupError(f"setns: {os.strerror(ctypes.get_errno())}")


def enter_network_namespace(name: str) -> None:
    """Move the calling thread into network namespace ``name`` (``ip netns`` names).

    Call it from the main thread before any other thread starts: threads and subprocesses
    created afterwards inherit the namespace, threads that already exist do not. The runner
    uses it to put its workloads (and itself) in the client namespace."""
    fd = os.open(f"/var/run/netns/{name}", os.O_RDONLY)
    try:
        set_network_namespace_fd(fd)
    finally:
        os.close(fd)


@dataclass(frozen=True, slots=True)
class ProxiedLink:
    """One (src, dst, port) routed through a proxy: what to remove on heal."""

    name: str
    listen: str
    dnat_rule: tuple[str, ...]
    reset_rules: tuple[tuple[str, ...], ...]


class ChaosCluster:
    """A netns LocalCluster plus link faults, a toxiproxy server, a full-disk tmpfs and
    clock skew. Create with :meth:`create`, then :meth:`start`; :meth:`close` removes
    everything (idempotent)."""

    def __init__(self, local: LocalCluster, tmpfs_dirs: list[Path]) -> None:
        if not isinstance(local.placement, NetnsTopology):
            raise ChaosSetupError("a chaos cluster needs network-namespace mode")
        self.local = local
        self.topology: NetnsTopology = local.placement
        self.tmpfs_dirs = list(tmpfs_dirs)
        self._toxiproxy: subprocess.Popen[bytes] | None = None
        self._proxied: dict[tuple[int, int], list[ProxiedLink]] = {}
        self._closed = False

    # --- creation ---------------------------------------------------------------------------

    @classmethod
    def create(
        cls,
        directory: Path,
        *,
        name: str,
        controllers: int = 3,
        brokers: int = 3,
        overrides: Mapping[str, str] | None = None,
        full_disk_broker_bytes: int = 0,
    ) -> ChaosCluster:
        """Create the namespaces and the cluster's files. With ``full_disk_broker_bytes`` > 0
        the last broker's log directory is a tmpfs of that size (for the full-disk fault)."""
        missing = missing_requirements()
        if missing:
            raise ChaosSetupError("a chaos cluster needs " + ", ".join(missing))
        if not name.startswith(NAMESPACE_PREFIX):
            raise ChaosSetupError(f"chaos namespace names start with {NAMESPACE_PREFIX!r}")
        local = LocalCluster.create(
            directory,
            controllers=controllers,
            brokers=brokers,
            overrides=overrides,
            placement=netns_placement(name),
        )
        tmpfs: list[Path] = []
        try:
            if full_disk_broker_bytes > 0:
                data_dir = Path(local.node(local.broker_ids[-1]).data_dir)
                mount_tmpfs(data_dir, full_disk_broker_bytes)
                tmpfs.append(data_dir)
        except BaseException:
            local.close()
            raise
        return cls(local, tmpfs)

    def start(self, ready_timeout_s: float, toxiproxy_seed: int | None = None) -> None:
        """Start the toxiproxy server (hub) and every node; wait until the cluster is ready.
        The caller must already be in the client namespace (:meth:`enter_client_namespace`),
        since the nodes are reachable only through the hub. ``toxiproxy_seed`` makes the
        proxies' toxicity draws and jitter reproducible."""
        self.start_proxy_server(toxiproxy_seed)
        self.local.start()
        self.local.wait_ready(ready_timeout_s)

    def enter_client_namespace(self) -> None:
        enter_network_namespace(self.topology.client_namespace)
        # LocalCluster probes the nodes in-process when it runs inside the topology.
        os.environ["KRAFTLOG_NETNS"] = self.topology.name
        # The toxiproxy client (requests) must not send 10.200.x.y through an HTTP proxy.
        no_proxy = os.environ.get("NO_PROXY", "")
        os.environ["NO_PROXY"] = ",".join(p for p in (no_proxy, "10.200.0.0/16") if p)

    @property
    def toxiproxy_host(self) -> str:
        return self.topology.hub_address(CLIENT)

    def start_proxy_server(self, seed: int | None = None) -> None:
        """Start the Toxiproxy-compatible server in the hub (API on the hub's address on the
        client's link, :attr:`toxiproxy_host`, port :data:`TOXIPROXY_API_PORT`)."""
        argv = [
            "ip",
            "netns",
            "exec",
            self.topology.name,
            sys.executable,
            "-m",
            "chaos.toxiproxy",
            "--host",
            "0.0.0.0",
            "--port",
            str(TOXIPROXY_API_PORT),
        ]
        if seed is not None:
            argv += ["--seed", str(seed)]
        log = open(self.local.directory / "toxiproxy.log", "ab")  # noqa: SIM115
        try:
            self._toxiproxy = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env=self.topology._env(),
            )
        finally:
            log.close()
        deadline = time.monotonic() + _TOXIPROXY_START_TIMEOUT_S
        while not self._toxiproxy_client().running():
            if self._toxiproxy.poll() is not None or time.monotonic() > deadline:
                raise ChaosSetupError(
                    f"the toxiproxy server did not start; see {self.local.directory}/toxiproxy.log"
                )
            time.sleep(0.1)

    def _toxiproxy_client(self) -> Any:  # toxiproxy-python has no type hints
        from toxiproxy import Toxiproxy

        client = Toxiproxy()
        client.update_api_consumer(self.toxiproxy_host, TOXIPROXY_API_PORT)
        return client

    # --- link faults ------------------------------------------------------------------------

    def cut(self, src: int, dst: int) -> None:
        """Drop every packet ``src`` sends to ``dst`` (one way)."""
        self.topology.block_one_way(src, dst)

    def uncut(self, src: int, dst: int) -> None:
        self.topology.heal_one_way(src, dst)

    def _loss_rule(self, src: int, dst: int, probability: float) -> list[str]:
        if not 0.0 < probability < 1.0:
            raise ValueError(f"loss probability must be in (0, 1), got {probability}")
        return [
            "FORWARD",
            "-s",
            self.topology.address(src),
            "-d",
            self.topology.address(dst),
            "-m",
            "statistic",
            "--mode",
            "random",
            "--probability",
            f"{probability:.3f}",
            "-j",
            "DROP",
        ]

    def lossy(self, src: int, dst: int, probability: float) -> None:
        """Drop each packet ``src`` sends to ``dst`` with ``probability``."""
        self.topology.insert_rule(self._loss_rule(src, dst, probability))

    def unlossy(self, src: int, dst: int, probability: float) -> None:
        self.topology.delete_rule(self._loss_rule(src, dst, probability))

    def ports_of(self, node_id: int) -> list[int]:
        node = self.local.node(node_id)
        return [p for p in (node.raft_port, node.controller_port, node.broker_port) if p]

    def slow(self, src: int, dst: int, toxics: list[dict[str, object]]) -> None:
        """Route new connections ``src`` -> ``dst`` (every port of dst) through proxies that
        carry ``toxics`` (toxiproxy-python ``add_toxic`` keyword dicts); existing direct
        connections are reset so they come back through the proxies."""
        if (src, dst) in self._proxied:
            raise ChaosSetupError(f"link {src}->{dst} is already proxied")
        client = self._toxiproxy_client()
        links: list[ProxiedLink] = []
        self._proxied[(src, dst)] = links
        a, b = self.topology.address(src), self.topology.address(dst)
        for port in self.ports_of(dst):
            name = f"link_{_tag(src)}_{_tag(dst)}_{port}"
            proxy = client.create(
                upstream=f"{b}:{port}", name=name, listen=f"{self.topology.hub_address(src)}:0"
            )
            for toxic in toxics:
                proxy.add_toxic(**toxic)
            dnat = (
                "PREROUTING",
                "-s",
                a,
                "-d",
                b,
                "-p",
                "tcp",
                "--dport",
                str(port),
                "-j",
                "DNAT",
                "--to-destination",
                proxy.listen,
            )
            resets = (
                (
                    "FORWARD",
                    "-s",
                    a,
                    "-d",
                    b,
                    "-p",
                    "tcp",
                    "--dport",
                    str(port),
                    "-j",
                    "REJECT",
                    "--reject-with",
                    "tcp-reset",
                ),
                (
                    "FORWARD",
                    "-s",
                    b,
                    "-d",
                    a,
                    "-p",
                    "tcp",
                    "--sport",
                    str(port),
                    "-j",
                    "REJECT",
                    "--reject-with",
                    "tcp-reset",
                ),
            )
            self.topology.insert_rule(list(dnat), table="nat")
            for rule in resets:
                self.topology.insert_rule(list(rule))
            links.append(ProxiedLink(name, proxy.listen, dnat, resets))

    def unslow(self, src: int, dst: int) -> None:
        """Stop routing ``src`` -> ``dst`` through proxies; deleting a proxy closes its
        connections, which then reconnect directly."""
        links = self._proxied.pop((src, dst), [])
        client = self._toxiproxy_client()
        proxies = client.proxies()
        for link in links:
            self.topology.delete_rule(list(link.dnat_rule), table="nat")
            for rule in link.reset_rules:
                self.topology.delete_rule(list(rule))
            proxy = proxies.get(link.name)
            if proxy is not None:
                proxy.destroy()

    def heal_network(self) -> None:
        """Remove every cut, loss rule and proxy."""
        self.topology.heal_all()
        self._proxied.clear()
        if self._toxiproxy is not None and self._toxiproxy.poll() is None:
            client = self._toxiproxy_client()
            client.destroy_all()

    # --- disk -------------------------------------------------------------------------------

    def filler_path(self, node_id: int) -> Path:
        return Path(self.local.node(node_id).data_dir) / "chaos-filler.bin"

    def fill_disk(self, node_id: int, max_bytes: int) -> int:
        """Fill ``node_id``'s log directory (a tmpfs) until ENOSPC or ``max_bytes``; returns
        the bytes written."""
        written = 0
        chunk = b"\0" * _FILL_CHUNK_BYTES
        with open(self.filler_path(node_id), "ab") as f:
            while written < max_bytes:
                try:
                    n = f.write(chunk[: min(len(chunk), max_bytes - written)])
                    f.flush()
                except OSError as e:
                    if e.errno != errno.ENOSPC:
                        raise
                    break
                written += n
        return written

    def free_disk(self, node_id: int) -> None:
        self.filler_path(node_id).unlink(missing_ok=True)

    # --- clock ------------------------------------------------------------------------------

    def set_clock_skew(self, node_id: int, skew_s: float | None) -> None:
        """Run ``node_id`` with its clock ``skew_s`` seconds off from its next start (None:
        the real clock). libfaketime shifts the wall clock and, by the same constant, the
        monotonic clock."""
        if skew_s is None:
            self.topology.node_env.pop(node_id, None)
            return
        lib = libfaketime_path()
        if lib is None:
            raise ChaosSetupError("libfaketime is not installed (Debian package faketime)")
        self.topology.node_env[node_id] = {"LD_PRELOAD": lib, "FAKETIME": f"{skew_s:+.0f}s"}

    # --- teardown ---------------------------------------------------------------------------

    def stop_nodes(self) -> None:
        """Kill every node and the toxiproxy server (log directories stay, tmpfs included,
        for the checker's replica comparison). Idempotent."""
        for node_id in self.local.node_ids:
            if self.local.is_paused(node_id):
                self.local.resume(node_id)
        try:
            self.local.close()
        except ClusterError:
            pass
        if self._toxiproxy is not None:
            if self._toxiproxy.poll() is None:
                os.killpg(self._toxiproxy.pid, signal.SIGKILL)
            self._toxiproxy.wait(_CMD_TIMEOUT_S)

    def close(self) -> None:
        """Kill every node and the toxiproxy server, unmount the tmpfs, delete the namespaces
        (and with them every rule). Safe to call twice and from a signal handler's finally."""
        if self._closed:
            return
        self._closed = True
        self.stop_nodes()
        for path in self.tmpfs_dirs:
            unmount_tmpfs(path)
        self.topology.destroy()


def _tag(endpoint: int) -> str:
    return "client" if endpoint == CLIENT else str(endpoint)


def mount_tmpfs(directory: Path, size_bytes: int) -> None:
    """Mount a tmpfs of ``size_bytes`` on ``directory``, keeping the files already there."""
    aside = directory.with_name(directory.name + ".before-tmpfs")
    directory.rename(aside)
    directory.mkdir()
    _run(["mount", "-t", "tmpfs", "-o", f"size={size_bytes}", TMPFS_SOURCE, str(directory)])
    for item in aside.iterdir():
        shutil.move(str(item), str(directory / item.name))
    aside.rmdir()


def unmount_tmpfs(directory: Path) -> None:
    subprocess.run(["umount", "-l", str(directory)], capture_output=True, timeout=_CMD_TIMEOUT_S)


def _run(argv: list[str]) -> None:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=_CMD_TIMEOUT_S)
    if done.returncode != 0:
        raise ChaosSetupError(f"{' '.join(argv)} failed: {done.stderr.strip()}")


def cleanup_leftovers(
    prefix: str = NAMESPACE_PREFIX, *, cluster_name: str | None = None
) -> list[str]:
    """Remove what crashed chaos runs left: every process inside a network namespace named
    ``prefix``... (or, with ``cluster_name``, only that cluster's: ``name`` and ``name-*``),
    those namespaces (with their rules), and every tmpfs mounted with source
    :data:`TMPFS_SOURCE` (only when cleaning by prefix: a cluster's own tmpfs is under its
    directory, which the caller knows). Returns what was removed, one line each."""
    removed: list[str] = []
    listed = subprocess.run(
        ["ip", "netns", "list"], capture_output=True, text=True, timeout=_CMD_TIMEOUT_S
    )
    names = [line.split()[0] for line in listed.stdout.splitlines() if line.strip()]
    if cluster_name is None:
        ours = [n for n in names if n.startswith(prefix)]
    else:
        ours = [n for n in names if n == cluster_name or n.startswith(cluster_name + "-")]
    for name in ours:
        pids = subprocess.run(
            ["ip", "netns", "pids", name], capture_output=True, text=True, timeout=_CMD_TIMEOUT_S
        )
        for pid_text in pids.stdout.split():
            pid = int(pid_text)
            if pid == os.getpid():
                continue
            try:
                os.kill(pid, signal.SIGCONT)  # a stopped process must run to die
                os.kill(pid, signal.SIGKILL)
                removed.append(f"process {pid} (namespace {name})")
            except ProcessLookupError:
                pass
    for name in ours:
        subprocess.run(["ip", "netns", "delete", name], capture_output=True, timeout=_CMD_TIMEOUT_S)
        removed.append(f"namespace {name}")
    if cluster_name is None:
        with open("/proc/mounts", encoding="utf-8") as f:
            mounts = [line.split() for line in f]
        for fields in mounts:
            if len(fields) >= 2 and fields[0] == TMPFS_SOURCE:
                unmount_tmpfs(Path(fields[1]))
                removed.append(f"tmpfs {fields[1]}")
    return removed
