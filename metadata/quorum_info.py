"""What a controller voter knows about the quorum: the log's status, the other voters' node
info (sent over Raft, see metadata.node_info) and the DescribeQuorum answer built from them.

The log's optional extras (``status``, ``peer_infos``) are looked up by name, so a log without
them (the in-memory test quorum) still answers, with less. Plain functions of their arguments;
thread-safe as far as the log's reads are.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

from metadata import features
from metadata import messages as m
from metadata.node_info import NodeInfo, decode_node_info
from raft.api import MetadataLogApi


def quorum_status(log: MetadataLogApi, node_id: int) -> dict[str, Any]:
    """The log's status as a dict (``MetadataLog.status()``); the basics without it."""
    status_fn = getattr(log, "status", None)
    if callable(status_fn):
        status = status_fn()
        if dataclasses.is_dataclass(status) and not isinstance(status, type):
            return dataclasses.asdict(status)
    return {
        "node_id": node_id,
        "leader_id": log.leader_id,
        "epoch": log.epoch,
        "committed_offset": log.committed_offset,
        "voters": [],
    }


def peer_node_infos(log: MetadataLogApi) -> dict[int, NodeInfo]:
    """What each other voter told this one about itself over Raft (metadata.node_info)."""
    infos_fn = getattr(log, "peer_infos", None)
    raw: dict[int, bytes] = infos_fn() if callable(infos_fn) else {}
    return {voter_id: decode_node_info(data) for voter_id, data in raw.items()}


def controller_features(
    log: MetadataLogApi, node_id: int
) -> dict[int, features.SupportedRange | None]:
    """Every voter with the metadata.version range it told this one (None: not yet)."""
    voter_ids = list(log.voters() or (node_id,))
    infos = peer_node_infos(log)
    out: dict[int, features.SupportedRange | None] = {}
    for voter_id in voter_ids:
        if voter_id == node_id:
            out[voter_id] = features.SUPPORTED
        else:
            info = infos.get(voter_id)
            out[voter_id] = info.supported if info is not None else None
    return out


def _or_minus_one(value: Any) -> int:
    return -1 if value is None else int(value)


def describe_quorum(
    log: MetadataLogApi,
    node_id: int,
    address: str,
    broker_observers: dict[int, tuple[int, int]],
    clock_now_ms: int,
) -> m.QuorumDescription:
    """The quorum as the active controller ``node_id`` (gRPC ``address``) sees it: voters with
    the log end each acknowledged and when it last answered; observers = the brokers (from
    ``broker_observers``: id -> (metadata offset in its latest heartbeat, clock_ms of that
    contact)) and the controllers that are not voters; every voter's gRPC address it knows."""
    status = quorum_status(log, node_id)
    committed = int(status.get("committed_offset", -1))
    voters = [
        m.QuorumReplica(
            int(v["node_id"]),
            _or_minus_one(v.get("match_offset")),
            _or_minus_one(v.get("last_fetch_ms")),
            _or_minus_one(v.get("last_caught_up_ms")),
        )
        for v in status.get("voters", [])
    ]
    wall_now = int(time.time() * 1000)
    observers = []
    for broker_id, (offset, contact_ms) in sorted(broker_observers.items()):
        seen = wall_now - (clock_now_ms - contact_ms)
        observers.append(
            m.QuorumReplica(broker_id, offset, seen, seen if offset >= committed else -1)
        )
    for observer in status.get("observers", []):  # controllers that are not voters
        observers.append(
            m.QuorumReplica(
                int(observer["node_id"]),
                _or_minus_one(observer.get("match_offset")),
                _or_minus_one(observer.get("last_fetch_ms")),
                _or_minus_one(observer.get("last_caught_up_ms")),
            )
        )
    addresses = {node_id: address}
    for voter_id, info in peer_node_infos(log).items():
        if info.controller_address is not None:
            addresses[voter_id] = info.controller_address
    nodes = []
    for voter_id, voter_address in sorted(addresses.items()):
        host, _, port = voter_address.rpartition(":")
        if port.isdigit():
            nodes.append(m.ControllerEndpoint(voter_id, host, int(port)))
    return m.QuorumDescription(
        leader_id=node_id,
        leader_epoch=int(status.get("epoch", -1)),
        high_watermark=committed,
        voters=voters,
        observers=observers,
        nodes=nodes,
    )
