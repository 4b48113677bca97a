"""Which replica sent a Fetch: ``replica_id`` up to v14, the tagged ``replica_state`` from v15
(KIP-903). A consumer is -1; a follower broker its broker id."""

from __future__ import annotations

from typing import Any

# Fetch v15+ names the fetching replica in the tagged ReplicaState, not replica_id.
REPLICA_STATE_SINCE = 15
CONSUMER_REPLICA_ID = -1


def fetch_replica_id(version: int, body: dict[str, Any]) -> int:
    """The replica id of a decoded Fetch request body of ``version``."""
    if version >= REPLICA_STATE_SINCE:
        return (body.get("replica_state") or {}).get("replica_id", CONSUMER_REPLICA_ID)
    return body.get("replica_id", CONSUMER_REPLICA_ID)
