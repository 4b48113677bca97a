"""Leader hints in Produce v10+ and Fetch v16+ answers (KIP-951).

When a partition is answered NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH, the answer also
says who leads it now (``current_leader``: the leader id and epoch in this broker's metadata
image) and, once per response, where each such leader listens (``node_endpoints``: its
endpoint on the listener the client connected to). A client then goes straight to the new
leader instead of waiting for a metadata refresh. Both are tagged fields: absent when there is
no hint, and ignored by clients that do not know them.

Thread-safety: pure functions over a response body and an immutable image.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from common.error_codes import ErrorCode
from common.topic_partition import TopicPartition
from metadata.image import MetadataImage

# The errors that mean "this broker is not (or no longer) the leader you want".
LEADER_HINT_ERRORS = frozenset({ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.FENCED_LEADER_EPOCH})
PRODUCE_HINTS_SINCE = 10
FETCH_HINTS_SINCE = 16


def add_leader_hints(
    image: MetadataImage,
    listener_name: str,
    body: dict[str, Any],
    entries: Iterable[tuple[TopicPartition, dict[str, Any]]],
) -> None:
    """Give every entry (a partition of ``body``'s answer) whose ``error_code`` is a
    not-the-leader error its ``current_leader``, and ``body`` the ``node_endpoints`` of those
    leaders (in place)."""
    leaders: set[int] = set()
    for tp, entry in entries:
        if entry.get("error_code") not in LEADER_HINT_ERRORS:
            continue
        reg = image.partition(tp.topic, tp.partition)
        if reg is None or reg.leader < 0:
            continue
        entry["current_leader"] = {"leader_id": reg.leader, "leader_epoch": reg.leader_epoch}
        leaders.add(reg.leader)
    endpoints = []
    for broker_id in sorted(leaders):
        broker = image.broker(broker_id)
        if broker is None or broker.fenced:
            continue
        listener = broker.listener(listener_name) or (
            broker.listeners[0] if broker.listeners else None
        )
        if listener is not None:
            endpoints.append(
                {
                    "node_id": broker_id,
                    "host": listener.host,
                    "port": listener.port,
                    "rack": broker.rack,
                }
            )
    if endpoints:
        body["node_endpoints"] = endpoints
