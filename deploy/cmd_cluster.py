"""``kraftlog cluster``: a local cluster on 127.0.0.1 (what ``make run`` starts).

    kraftlog cluster up [--dir D] [--controllers 3] [--brokers 3] [--detach] [--override k=v]
        [--security plaintext|ssl|sasl_ssl|sasl_plaintext] [--monitoring]
    kraftlog cluster down [--dir D] [--grace SECONDS]
    kraftlog cluster restart [--rolling] [--dir D] [--grace SECONDS] [--timeout SECONDS]
    kraftlog cluster start-node | stop-node | restart-node ID [--dir D] [--grace SECONDS]
    kraftlog cluster status [--dir D | --bootstrap-controller HOST:PORT,...] [--json]

``up`` creates the cluster in D (default ``.cluster``) unless one is there already, starts every
node that is not running, waits until the quorum has an active controller and every broker is
registered and unfenced, and prints the bootstrap servers. Without ``--detach`` it then stays
in the foreground and stops the cluster on Ctrl-C / SIGTERM. If the cluster does not come up
in ``--timeout`` seconds it prints the failing node's log tail, stops what it started and
exits 1. Every node serves Prometheus metrics on a port of its own (``status`` shows each
endpoint); ``--monitoring`` also writes a scrape config and Grafana provisioning for them
(:mod:`deploy.monitoring_files`). ``--security`` makes a new cluster secure and writes the
client settings of its admin identity (:mod:`deploy.secure_cluster`). The logic lives in
:class:`deploy.local_cluster.LocalCluster`.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from pathlib import Path
from types import FrameType

from common.configdef import ConfigError
from deploy.admin import (
    DEFAULT_CLUSTER_DIR,
    AdminError,
    add_target_args,
    connect,
    fail,
    print_json,
    resolve_target,
)
from deploy.cluster_info import remote_status, render_cluster
from deploy.cluster_layout import ClusterLayout, ClusterLayoutError
from deploy.cmd_start import parse_overrides
from deploy.command_group import add_command_group
from deploy.local_cluster import (
    DEFAULT_READY_TIMEOUT_S,
    DEFAULT_STOP_GRACE_S,
    ClusterError,
    LocalCluster,
)
from deploy.meta_properties import MetaPropertiesError
from deploy.monitoring_files import write_monitoring_files
from deploy.rolling_restart import rolling_restart
from deploy.secure_cluster import SecurityMode

# Status asks questions a live cluster answers at once; do not hang on a dead one.
STATUS_TIMEOUT_S = 3.0
# How often the foreground supervisor checks its nodes.
_SUPERVISE_INTERVAL_S = 1.0


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    _, cluster_sub = add_command_group(sub, "cluster", "run a local cluster (up, down, status)")

    p = cluster_sub.add_parser("up", help="create (if needed) and start a local cluster")
    p.add_argument("--dir", default=DEFAULT_CLUSTER_DIR, help="cluster directory (.cluster)")
    p.add_argument("--controllers", type=int, default=3, help="voters (default 3)")
    p.add_argument("--brokers", type=int, default=3, help="brokers (default 3)")
    p.add_argument("--detach", "-d", action="store_true", help="return once the cluster is up")
    p.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_READY_TIMEOUT_S,
        help=f"seconds to wait for the cluster (default {DEFAULT_READY_TIMEOUT_S:.0f})",
    )
    p.add_argument(
        "--override",
        "-o",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a config key for every node of a NEW cluster (repeatable)",
    )
    p.add_argument(
        "--security",
        choices=[m.value for m in SecurityMode],
        default=SecurityMode.PLAINTEXT.value,
        help="a NEW cluster with TLS / SASL (SCRAM-SHA-512), the authorizer and mutual TLS "
        "on the control plane; client settings are written next to it (default plaintext)",
    )
    p.add_argument(
        "--monitoring",
        action="store_true",
        help="also write a Prometheus scrape config and Grafana provisioning to D/monitoring",
    )
    p.add_argument("--json", action="store_true", help="print the cluster status as JSON")
    p.set_defaults(func=_up)

    p = cluster_sub.add_parser("down", help="stop every node of a local cluster")
    _dir_and_grace(p)
    p.set_defaults(func=_down)

    p = cluster_sub.add_parser("restart", help="restart every node (--rolling: one at a time)")
    _dir_and_grace(p)
    p.add_argument(
        "--rolling",
        action="store_true",
        help="one node at a time, each once the cluster is healthy again (no downtime)",
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_READY_TIMEOUT_S,
        help="seconds to wait for the cluster to be healthy after each node "
        f"(default {DEFAULT_READY_TIMEOUT_S:.0f})",
    )
    p.set_defaults(func=_restart)

    for name, helptext, func in (
        ("start-node", "start one node of a local cluster", _start_node),
        ("stop-node", "stop one node (SIGTERM: controlled shutdown)", _stop_node),
        ("restart-node", "stop, then start one node", _restart_node),
    ):
        p = cluster_sub.add_parser(name, help=helptext)
        p.add_argument("node_id", type=int, metavar="ID")
        _dir_and_grace(p)
        p.set_defaults(func=func)

    p = cluster_sub.add_parser(
        "add-controller",
        help="create, format and start a new controller that observes the quorum (then make "
        "it a voter with kraftlog quorum add-controller --config FILE)",
    )
    p.add_argument("--dir", default=DEFAULT_CLUSTER_DIR, help="cluster directory (.cluster)")
    p.set_defaults(func=_add_controller)

    p = cluster_sub.add_parser("status", help="nodes, pids, listeners, quorum leader")
    add_target_args(p)
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=_status, timeout=STATUS_TIMEOUT_S)


def _print_client_settings(cluster: LocalCluster, files: dict[str, Path]) -> None:
    print(f"Security:              {cluster.layout.security} (admin identity below)")
    for name, path in files.items():
        print(f"  {name + ':':<14} {path}")
    print("confluent-kafka / librdkafka:")
    for line in files["librdkafka"].read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            print(f"  {line}")
    kwargs = json.loads(files["kafka-python"].read_text(encoding="utf-8"))
    print("kafka-python:")
    print(f"  KafkaProducer(**{kwargs!r})")
    print(f"kraftlog admin commands: --command-config {files['admin']}")


def _dir_and_grace(p: argparse.ArgumentParser) -> None:
    """The cluster directory and the stop grace, for the commands that stop nodes."""
    p.add_argument("--dir", default=DEFAULT_CLUSTER_DIR, help="cluster directory (.cluster)")
    p.add_argument(
        "--grace",
        type=float,
        default=DEFAULT_STOP_GRACE_S,
        help=f"seconds between SIGTERM and SIGKILL (default {DEFAULT_STOP_GRACE_S:.0f})",
    )


def _restart(args: argparse.Namespace) -> int:
    try:
        cluster = LocalCluster.open(args.dir)
        if args.rolling:
            steps = rolling_restart(
                cluster,
                grace_s=args.grace,
                timeout_s=args.timeout,
                progress=lambda line: print(line, flush=True),
            )
            print(f"Rolling restart of {len(steps)} nodes done; the cluster is healthy.")
            return 0
        cluster.down(args.grace)
        cluster.start()
        cluster.wait_ready(args.timeout)
    except (ClusterError, ClusterLayoutError, OSError) as e:
        return fail(str(e))
    print(f"Restarted every node of the cluster in {args.dir}.")
    return 0


def _one_node(args: argparse.Namespace) -> LocalCluster:
    cluster = LocalCluster.open(args.dir)
    if args.node_id not in cluster.node_ids:
        known = ", ".join(map(str, cluster.node_ids))
        raise ClusterError(f"no node {args.node_id} in {args.dir} (nodes: {known})")
    return cluster


def _add_controller(args: argparse.Namespace) -> int:
    try:
        cluster = LocalCluster.open(args.dir)
        node_id = cluster.add_controller()
        pid = cluster.start_node(node_id)
    except (ClusterError, ClusterLayoutError, ConfigError, OSError) as e:
        return fail(str(e))
    config = cluster.config_path(node_id)
    print(f"Controller {node_id} started (pid {pid}); it follows the quorum as an observer.")
    print(f"Make it a voter: kraftlog quorum add-controller --config {config} --dir {args.dir}")
    return 0


def _start_node(args: argparse.Namespace) -> int:
    try:
        cluster = _one_node(args)
        was = cluster.pid(args.node_id)
        pid = cluster.start_node(args.node_id)
    except (ClusterError, ClusterLayoutError, OSError) as e:
        return fail(str(e))
    verb = "is already running" if was == pid else "started"
    print(f"Node {args.node_id} {verb} (pid {pid}).")
    return 0


def _stop_node(args: argparse.Namespace) -> int:
    try:
        cluster = _one_node(args)
        pid = cluster.pid(args.node_id)
        clean = cluster.stop_node(args.node_id, grace_s=args.grace)
    except (ClusterError, ClusterLayoutError, OSError) as e:
        return fail(str(e))
    if pid is None:
        print(f"Node {args.node_id} is not running.")
    else:
        how = "stopped" if clean else f"killed after {args.grace:.0f} s"
        print(f"Node {args.node_id} (pid {pid}) {how}.")
    return 0


def _restart_node(args: argparse.Namespace) -> int:
    code = _stop_node(args)
    return code if code else _start_node(args)


def _up(args: argparse.Namespace) -> int:
    try:
        cluster, already = _open_or_create(args)
    except (ClusterError, ClusterLayoutError, ConfigError, MetaPropertiesError, ValueError) as e:
        return fail(str(e))
    except OSError as e:
        return fail(f"{e.filename or args.dir}: {e.strerror}")
    try:
        cluster.start()
        cluster.wait_ready(args.timeout)
        client_files = cluster.finish_security(args.timeout)
    except (ClusterError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        started = [i for i in cluster.running_ids() if i not in already]
        for node_id in started:
            cluster.stop_node(node_id, grace_s=5.0)
        return 1
    doc = cluster.status()
    if client_files:
        doc["security"] = cluster.layout.security
        doc["client_settings"] = {name: str(path) for name, path in client_files.items()}
    monitoring = _write_monitoring(cluster) if args.monitoring else None
    if monitoring is not None:
        doc["monitoring"] = str(monitoring)
    if args.json:
        print_json(doc)
    else:
        _print_up(cluster, client_files, monitoring)
    sys.stdout.flush()
    if args.detach:
        return 0
    return _supervise(cluster)


def _open_or_create(args: argparse.Namespace) -> tuple[LocalCluster, list[int]]:
    """The cluster in ``args.dir``, created from the arguments when there is none, and the
    ids of its nodes already running."""
    overrides = parse_overrides(args.override)
    if not ClusterLayout.exists(args.dir):
        cluster = LocalCluster.create(
            args.dir,
            controllers=args.controllers,
            brokers=args.brokers,
            overrides=overrides,
            security=SecurityMode(args.security),
        )
        return cluster, []
    cluster = LocalCluster.open(args.dir)
    if overrides:
        print("note: --override applies to new clusters only; ignored", file=sys.stderr)
    if args.security != cluster.layout.security:
        print(
            f"note: this cluster was made with --security {cluster.layout.security}; "
            f"--security {args.security} applies to new clusters only",
            file=sys.stderr,
        )
    already = cluster.running_ids()
    if len(already) == len(cluster.node_ids):
        print(f"The cluster in {args.dir} is already running.", file=sys.stderr)
    return cluster, already


def _write_monitoring(cluster: LocalCluster) -> Path:
    """Write the scrape config and Grafana provisioning for the nodes' metrics ports."""
    ports: dict[int, int] = {}
    for node_id in cluster.node_ids:
        endpoint = cluster.metrics_endpoint(node_id)
        if endpoint is not None:
            ports[node_id] = endpoint[1]
    return write_monitoring_files(cluster.layout, ports)


def _print_up(
    cluster: LocalCluster, client_files: dict[str, Path], monitoring: Path | None
) -> None:
    print(
        f"Cluster {cluster.cluster_id} is up in {cluster.directory}: "
        f"{len(cluster.controller_ids)} controllers, {len(cluster.broker_ids)} brokers."
    )
    print(f"Bootstrap servers:     {','.join(cluster.bootstrap_servers())}")
    print(f"Bootstrap controllers: {','.join(cluster.bootstrap_controllers())}")
    metrics = [u for u in (cluster.metrics_url(i) for i in cluster.node_ids) if u]
    if metrics:
        print(f"Metrics:               {' '.join(metrics)}")
    if client_files:
        _print_client_settings(cluster, client_files)
    if monitoring is not None:
        print(f"Monitoring files:      {monitoring}")
        print(f"  prometheus --config.file={monitoring / 'prometheus.yml'}")
        print(f"  GF_PATHS_PROVISIONING={monitoring / 'grafana' / 'provisioning'} grafana-server")


def _supervise(cluster: LocalCluster) -> int:
    """Stay in the foreground until Ctrl-C / SIGTERM, reporting nodes that exit."""
    stop = threading.Event()

    def handler(_signum: int, _frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGINT, handler)
    signal.signal(signal.SIGTERM, handler)
    print("Press Ctrl-C to stop the cluster.", file=sys.stderr)
    reported: set[int] = set()
    while not stop.wait(_SUPERVISE_INTERVAL_S):
        for node_id in cluster.node_ids:
            if node_id not in reported and not cluster.is_running(node_id):
                reported.add(node_id)
                print(
                    f"node {node_id} exited; last lines of {cluster.node(node_id).log_path}:\n"
                    f"{cluster.log_tail(node_id, 10)}",
                    file=sys.stderr,
                )
    print("Stopping the cluster...", file=sys.stderr)
    killed = cluster.down()
    if killed:
        print(f"killed after the grace period: {killed}", file=sys.stderr)
    return 0


def _down(args: argparse.Namespace) -> int:
    try:
        cluster = LocalCluster.open(args.dir)
    except ClusterLayoutError as e:
        return fail(str(e))
    running = cluster.running_ids()
    if not running:
        print(f"No node of the cluster in {args.dir} is running.")
        return 0
    killed = cluster.down(args.grace)
    print(f"Stopped {len(running)} nodes of the cluster in {args.dir}.")
    if killed:
        print(f"Killed after {args.grace:.0f} s: {', '.join(map(str, killed))}")
    return 0


def cluster_status_doc(args: argparse.Namespace) -> dict[str, object]:
    target = resolve_target(args)
    if target.layout is not None:
        return LocalCluster(target.layout).status(args.timeout)
    with connect(target, args.timeout) as client:
        return remote_status(client, target.bootstrap)


def _status(args: argparse.Namespace) -> int:
    try:
        doc = cluster_status_doc(args)
    except AdminError as e:
        return fail(str(e))
    if args.json:
        print_json(doc)
    else:
        print(render_cluster(doc))
    return 0
