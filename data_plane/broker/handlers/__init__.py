"""Request handlers, one module per API, and the table the server dispatches on.

``HANDLERS`` maps an API key to its handler and the highest version the handler implements
(``HANDLER_MIN_VERSIONS`` the lowest, where it is above the codec's); :func:`advertised`
intersects that with the codec's SUPPORTED_VERSIONS, which is exactly what ApiVersions
advertises. Any other API (or version) gets UNSUPPORTED_VERSION and a closed
connection from the server.
"""

from __future__ import annotations

from common.protocol.api_keys import SUPPORTED_VERSIONS, ApiKey
from data_plane.broker.apis import Handler
from data_plane.broker.handlers import (
    add_offsets_to_txn,
    add_partitions_to_txn,
    alter_configs,
    alter_user_scram_credentials,
    api_versions,
    consumer_group_describe,
    consumer_group_heartbeat,
    create_partitions,
    create_topics,
    delete_groups,
    delete_records,
    delete_topics,
    describe_cluster,
    describe_configs,
    describe_groups,
    describe_log_dirs,
    describe_producers,
    describe_quorum,
    describe_topic_partitions,
    describe_transactions,
    describe_user_scram_credentials,
    elect_leaders,
    end_txn,
    fetch,
    find_coordinator,
    heartbeat,
    incremental_alter_configs,
    init_producer_id,
    join_group,
    leave_group,
    list_groups,
    list_offsets,
    list_transactions,
    metadata,
    offset_commit,
    offset_delete,
    offset_fetch,
    offset_for_leader_epoch,
    produce,
    sync_group,
    txn_offset_commit,
    update_features,
    write_txn_markers,
)
from data_plane.security.broker_security import sasl_not_enabled

# api key -> (handler, highest version it implements)
HANDLERS: dict[ApiKey, tuple[Handler, int]] = {
    ApiKey.PRODUCE: (produce.handle, 11),
    ApiKey.FETCH: (fetch.handle, 17),
    ApiKey.LIST_OFFSETS: (list_offsets.handle, 9),
    ApiKey.METADATA: (metadata.handle, 12),
    ApiKey.API_VERSIONS: (api_versions.handle, 4),
    ApiKey.CREATE_TOPICS: (create_topics.handle, 7),
    ApiKey.DELETE_TOPICS: (delete_topics.handle, 6),
    ApiKey.DELETE_RECORDS: (delete_records.handle, 2),
    ApiKey.DESCRIBE_CONFIGS: (describe_configs.handle, 4),
    ApiKey.CREATE_PARTITIONS: (create_partitions.handle, 3),
    ApiKey.ALTER_CONFIGS: (alter_configs.handle, 2),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: (incremental_alter_configs.handle, 1),
    ApiKey.OFFSET_FOR_LEADER_EPOCH: (offset_for_leader_epoch.handle, 4),
    ApiKey.INIT_PRODUCER_ID: (init_producer_id.handle, 5),
    # Transactions (data_plane.coordinator.transaction_*, docs/transactions.md).
    ApiKey.ADD_PARTITIONS_TO_TXN: (add_partitions_to_txn.handle, 5),
    ApiKey.ADD_OFFSETS_TO_TXN: (add_offsets_to_txn.handle, 4),
    ApiKey.END_TXN: (end_txn.handle, 4),
    ApiKey.WRITE_TXN_MARKERS: (write_txn_markers.handle, 1),
    ApiKey.TXN_OFFSET_COMMIT: (txn_offset_commit.handle, 4),
    ApiKey.DESCRIBE_TRANSACTIONS: (describe_transactions.handle, 0),
    ApiKey.LIST_TRANSACTIONS: (list_transactions.handle, 2),
    ApiKey.DESCRIBE_PRODUCERS: (describe_producers.handle, 0),
    ApiKey.DESCRIBE_LOG_DIRS: (describe_log_dirs.handle, 4),
    ApiKey.ELECT_LEADERS: (elect_leaders.handle, 2),
    ApiKey.DESCRIBE_CLUSTER: (describe_cluster.handle, 1),
    ApiKey.DESCRIBE_QUORUM: (describe_quorum.handle, 2),
    ApiKey.OFFSET_DELETE: (offset_delete.handle, 0),
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: (describe_user_scram_credentials.handle, 0),
    ApiKey.DESCRIBE_TOPIC_PARTITIONS: (describe_topic_partitions.handle, 0),
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: (alter_user_scram_credentials.handle, 0),
    ApiKey.UPDATE_FEATURES: (update_features.handle, 1),
    # Consumer groups (data_plane.coordinator, docs/groups.md).
    ApiKey.FIND_COORDINATOR: (find_coordinator.handle, 6),
    ApiKey.JOIN_GROUP: (join_group.handle, 9),
    ApiKey.SYNC_GROUP: (sync_group.handle, 5),
    ApiKey.HEARTBEAT: (heartbeat.handle, 4),
    ApiKey.LEAVE_GROUP: (leave_group.handle, 5),
    ApiKey.OFFSET_COMMIT: (offset_commit.handle, 9),
    ApiKey.OFFSET_FETCH: (offset_fetch.handle, 9),
    ApiKey.DESCRIBE_GROUPS: (describe_groups.handle, 5),
    ApiKey.LIST_GROUPS: (list_groups.handle, 5),
    # KIP-848 consumer groups (data_plane.coordinator.consumer_group).
    ApiKey.CONSUMER_GROUP_HEARTBEAT: (consumer_group_heartbeat.handle, 1),
    ApiKey.CONSUMER_GROUP_DESCRIBE: (consumer_group_describe.handle, 0),
    # Answered by the SASL layer (data_plane.security) before any handler on SASL listeners.
    ApiKey.SASL_HANDSHAKE: (sasl_not_enabled, 1),
    ApiKey.SASL_AUTHENTICATE: (sasl_not_enabled, 2),
    ApiKey.DELETE_GROUPS: (delete_groups.handle, 2),
}


# Lowest version served where it is above the codec's: Produce v0-2 carry message formats
# v0/v1, which kraftlog does not store; Kafka 4 no longer serves them either (KIP-896), so an
# old client gets a clean UNSUPPORTED_VERSION instead of CORRUPT_MESSAGE.
HANDLER_MIN_VERSIONS: dict[ApiKey, int] = {ApiKey.PRODUCE: 3}


def advertised() -> dict[ApiKey, tuple[int, int]]:
    """api key -> (min, max) version this broker answers."""
    out = {}
    for key, (_, hi) in HANDLERS.items():
        supported = SUPPORTED_VERSIONS.get(key)
        if supported is None:
            continue
        lo = max(supported[0], HANDLER_MIN_VERSIONS.get(key, 0))
        if lo <= min(hi, supported[1]):
            out[key] = (lo, min(hi, supported[1]))
    return out


def handler_for(api_key: int, api_version: int) -> Handler | None:
    """The handler for this key and version, or None (unsupported)."""
    try:
        key = ApiKey(api_key)
    except ValueError:
        return None
    entry = HANDLERS.get(key)
    rng = advertised().get(key)
    if entry is None or rng is None or not rng[0] <= api_version <= rng[1]:
        return None
    return entry[0]
