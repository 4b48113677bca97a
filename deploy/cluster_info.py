"""What ``cluster status`` and ``quorum status`` show, as JSON-ready dicts, and their text form.

The document (``--json``)::

    {"cluster_id": str|null, "bootstrap_servers": ["host:port", ...],
     "bootstrap_controllers": ["host:port", ...], "quorum_leader_id": int|null,
     "quorum_epoch": int|null,
     "quorum": {"node_id", "leader_id", "epoch", "committed_offset", "log_start_offset",
                "snapshot_last_offset", "voters": [{"node_id", "address", "connected",
                "is_leader", "match_offset", "lag_records"}],
                "observers": [the same, for controllers that follow without voting]} | null,
     "nodes": [{"id", "roles", "pid", "state", "listeners": {"CONTROLLER": "h:p", ...},
                "raft_address"?, "metrics"? ("http://h:p/metrics"), "broker_epoch"?,
                "fenced"?}, ...],
     "error": str|null}

With a local cluster directory every node has its pid and state; with only
``--bootstrap-controller`` the nodes come from the controllers (voters from the quorum status,
brokers from their registrations) and ``pid`` is null.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from deploy.text_table import format_table
from metadata.client import ControllerClient
from metadata.messages import ClusterDescription


@dataclasses.dataclass(slots=True)
class ControllerView:
    cluster: ClusterDescription | None
    quorum: dict[str, Any] | None
    error: str | None


def probe_controllers(client: ControllerClient) -> ControllerView:
    """Ask the active controller for the cluster and the quorum; any part may fail alone."""
    cluster = quorum = None
    errors = []
    try:
        # DescribeCluster goes to the active controller and the client then stays with it, so
        # the QuorumStatus below is the leader's view: the one that knows the followers' lag.
        cluster = client.describe_cluster()
    except Exception as e:  # the status of a broken cluster is still a status
        errors.append(f"describe cluster: {type(e).__name__}: {e}")
    try:
        quorum = quorum_status_dict(client.quorum_status())
    except Exception as e:
        errors.append(f"quorum status: {type(e).__name__}: {e}")
    return ControllerView(cluster, quorum, "; ".join(errors) or None)


def quorum_status_dict(status: Any) -> dict[str, Any]:
    """A raft QuorumStatus (or the dict the control plane sends) as a plain dict."""
    if dataclasses.is_dataclass(status) and not isinstance(status, type):
        return dataclasses.asdict(status)
    if isinstance(status, dict):
        return status
    raise TypeError(f"not a quorum status: {type(status).__name__}")


def remote_status(client: ControllerClient, bootstrap: list[str]) -> dict[str, Any]:
    """The status document built from the controllers alone (no local cluster directory)."""
    view = probe_controllers(client)
    nodes: list[dict[str, Any]] = []
    if view.quorum is not None:
        for v in view.quorum.get("voters", []):
            nodes.append(
                {
                    "id": v["node_id"],
                    "roles": ["controller"],
                    "pid": None,
                    "state": "running" if v.get("connected") else "unreachable",
                    "listeners": {},
                    "raft_address": v.get("address"),
                }
            )
    brokers = view.cluster.brokers if view.cluster is not None else []
    by_id = {n["id"]: n for n in nodes}
    for b in brokers:
        listeners = {e.name: f"{e.host}:{e.port}" for e in b.listeners}
        entry = by_id.get(b.broker_id)
        if entry is None:
            entry = {"id": b.broker_id, "roles": [], "pid": None, "listeners": {}}
            nodes.append(entry)
        entry["roles"] = [*entry["roles"], "broker"]
        entry["listeners"].update(listeners)
        entry["state"] = "fenced" if b.fenced else "running"
        entry["broker_epoch"] = b.epoch
        entry["fenced"] = b.fenced
    bootstrap_servers = sorted(
        f"{e.host}:{e.port}"
        for b in brokers
        for e in b.listeners
        if e.name == "PLAINTEXT" and not b.fenced
    )
    return {
        "cluster_id": view.cluster.cluster_id if view.cluster is not None else None,
        "bootstrap_servers": bootstrap_servers,
        "bootstrap_controllers": bootstrap,
        "quorum_leader_id": view.quorum.get("leader_id") if view.quorum else None,
        "quorum_epoch": view.quorum.get("epoch") if view.quorum else None,
        "quorum": view.quorum,
        "nodes": sorted(nodes, key=lambda n: n["id"]),
        "error": view.error,
    }


def render_cluster(doc: dict[str, Any]) -> str:
    lines = [f"ClusterId:           {doc.get('cluster_id')}"]
    if doc.get("directory"):
        lines.append(f"Directory:           {doc['directory']}")
    leader = doc.get("quorum_leader_id")
    lines.append(
        f"QuorumLeaderId:      {leader if leader is not None else 'none'}"
        f" (epoch {doc.get('quorum_epoch')})"
    )
    lines.append(f"BootstrapServers:    {','.join(doc.get('bootstrap_servers', []))}")
    lines.append(f"BootstrapControllers: {','.join(doc.get('bootstrap_controllers', []))}")
    lines.append("")
    header = ("NodeId", "Roles", "Pid", "State", "Listeners", "Details")
    rows = []
    for n in doc.get("nodes", []):
        listeners = " ".join(f"{k}://{v}" for k, v in n.get("listeners", {}).items())
        details = []
        if n.get("raft_address"):
            details.append(f"raft={n['raft_address']}")
        if n.get("metrics"):
            details.append(f"metrics={n['metrics']}")
        if leader is not None and n["id"] == leader:
            details.append("active-controller")
        if n.get("broker_epoch") is not None:
            details.append(f"broker_epoch={n['broker_epoch']}")
            if n.get("fenced"):
                details.append("fenced")
        pid = n.get("pid")
        rows.append(
            (
                str(n["id"]),
                ",".join(n.get("roles", [])),
                str(pid) if pid is not None else "-",
                str(n.get("state", "?")),
                listeners,
                " ".join(details),
            )
        )
    lines += _table(header, rows)
    if doc.get("error"):
        lines += ["", f"warning: {doc['error']}"]
    return "\n".join(lines)


def render_quorum(doc: dict[str, Any]) -> str:
    q = doc.get("quorum")
    if q is None:
        return f"no voter answered: {doc.get('error')}"
    voters = q.get("voters", [])
    controller_observers = q.get("observers", [])
    lags = [v["lag_records"] for v in voters if v.get("lag_records") is not None]
    broker_ids = sorted(n["id"] for n in doc.get("nodes", []) if "broker" in n.get("roles", []))
    observer_ids = sorted({*broker_ids, *(o["node_id"] for o in controller_observers)})
    lines = [
        f"ClusterId:              {doc.get('cluster_id')}",
        f"LeaderId:               {q.get('leader_id')}",
        f"LeaderEpoch:            {q.get('epoch')}",
        f"HighWatermark:          {q.get('committed_offset')}",
        f"MaxFollowerLag:         {max(lags) if lags else 'unknown'}",
        f"LogStartOffset:         {q.get('log_start_offset')}",
        f"SnapshotLastOffset:     {q.get('snapshot_last_offset')}",
        f"CurrentVoters:          [{','.join(str(v['node_id']) for v in voters)}]",
        f"CurrentObservers:       [{','.join(map(str, observer_ids))}]",
        f"AnsweredBy:             {q.get('node_id')}",
        "",
    ]
    header = ("NodeId", "RaftAddress", "MatchOffset", "Lag", "Connected", "Status")
    rows = [
        (
            str(v["node_id"]),
            str(v.get("address")),
            _opt(v.get("match_offset")),
            _opt(v.get("lag_records")),
            "yes" if v.get("connected") else "no",
            status,
        )
        for replicas, role in ((voters, "Follower"), (controller_observers, "Observer"))
        for v in replicas
        for status in ("Leader" if v.get("is_leader") else role,)
    ]
    lines += _table(header, rows)
    if doc.get("error"):
        lines += ["", f"warning: {doc['error']}"]
    return "\n".join(lines)


def _opt(value: Any) -> str:
    return "unknown" if value is None else str(value)


def _table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    return format_table([header, *rows])
