"""Request handlers, one module per API, and the handler registry the server dispatches on.

``HANDLERS`` is the one table of the APIs this broker serves. Each entry (:class:`Api`) names
the API's handler, its authorization rule (``authorize``, beside the handler in the API's
module; the machinery is data_plane.security.request_authz) and the ACLs that rule checks
(operations on resource types; operations implied by others, such as Describe by Read or
Write, are the Authorizer's, as in Kafka). The versions served are the codec's
(SUPPORTED_VERSIONS), from ``min_version`` where an API starts above the codec's lowest:
:func:`advertised` is exactly what ApiVersions advertises. Any other API (or version) gets
UNSUPPORTED_VERSION and a closed connection from the server.

Invariants, checked when the table is built: every entry has an authorization rule; an entry
declares ACLs exactly when its rule is not :func:`unchecked`; an API appears once and is one
the codec knows.
"""

from __future__ import annotations

from dataclasses import dataclass

from common.protocol.api_keys import SUPPORTED_VERSIONS, ApiKey
from common.security.acl import AclOperation, ResourceType
from data_plane.broker.apis import Handler
from data_plane.broker.handlers import (
    add_offsets_to_txn,
    add_partitions_to_txn,
    alter_client_quotas,
    alter_configs,
    alter_partition_reassignments,
    alter_user_scram_credentials,
    api_versions,
    consumer_group_describe,
    consumer_group_heartbeat,
    create_acls,
    create_partitions,
    create_topics,
    delete_acls,
    delete_groups,
    delete_records,
    delete_topics,
    describe_acls,
    describe_client_quotas,
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
    list_partition_reassignments,
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
from data_plane.security.request_authz import Acl, AuthorizationRule, unchecked


@dataclass(frozen=True, slots=True)
class Api:
    """One served API: its handler, its authorization rule and the ACLs the rule checks, and
    the lowest version served where it is above the codec's."""

    key: ApiKey
    handler: Handler
    authorize: AuthorizationRule
    acls: tuple[Acl, ...]
    min_version: int = 0

    def __post_init__(self) -> None:
        if not callable(self.authorize):
            raise TypeError(f"{self.key.name} has no authorization rule")
        if (self.authorize is unchecked) != (not self.acls):
            raise ValueError(
                f"{self.key.name}: an API declares the ACLs it checks exactly when its rule "
                "is not `unchecked`"
            )


def registry(*apis: Api) -> dict[ApiKey, Api]:
    """The table of ``apis`` by key; each API once, and only APIs the codec knows."""
    table: dict[ApiKey, Api] = {}
    for api in apis:
        if api.key in table:
            raise ValueError(f"{api.key.name} is registered twice")
        if api.key not in SUPPORTED_VERSIONS:
            raise ValueError(f"{api.key.name} is not known to the codec")
        table[api.key] = api
    return table


def topic(*ops: AclOperation) -> tuple[Acl, ...]:
    return tuple((op, ResourceType.TOPIC) for op in ops)


def group(*ops: AclOperation) -> tuple[Acl, ...]:
    return tuple((op, ResourceType.GROUP) for op in ops)


def cluster(*ops: AclOperation) -> tuple[Acl, ...]:
    return tuple((op, ResourceType.CLUSTER) for op in ops)


def transactional_id(*ops: AclOperation) -> tuple[Acl, ...]:
    return tuple((op, ResourceType.TRANSACTIONAL_ID) for op in ops)


READ, WRITE, CREATE, DELETE, ALTER = (
    AclOperation.READ,
    AclOperation.WRITE,
    AclOperation.CREATE,
    AclOperation.DELETE,
    AclOperation.ALTER,
)
DESCRIBE, CLUSTER_ACTION = AclOperation.DESCRIBE, AclOperation.CLUSTER_ACTION
DESCRIBE_CONFIGS, ALTER_CONFIGS = AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS
IDEMPOTENT_WRITE = AclOperation.IDEMPOTENT_WRITE
K = ApiKey

HANDLERS: dict[ApiKey, Api] = registry(
    # Produce v0-2 carry message formats v0/v1, which kraftlog does not store; Kafka 4 no
    # longer serves them either (KIP-896), so an old client gets a clean UNSUPPORTED_VERSION
    # instead of CORRUPT_MESSAGE.
    Api(
        K.PRODUCE,
        produce.handle,
        produce.authorize,
        topic(WRITE) + transactional_id(WRITE),
        min_version=3,
    ),
    # Replica fetches (replica_id >= 0) need ClusterAction, consumer fetches Read.
    Api(K.FETCH, fetch.handle, fetch.authorize, topic(READ) + cluster(CLUSTER_ACTION)),
    Api(K.LIST_OFFSETS, list_offsets.handle, list_offsets.authorize, topic(DESCRIBE)),
    # Auto-creating a topic needs Create on the cluster or on the topic.
    Api(
        K.METADATA,
        metadata.handle,
        metadata.authorize,
        topic(DESCRIBE, CREATE) + cluster(CREATE),
    ),
    Api(K.API_VERSIONS, api_versions.handle, unchecked, ()),
    Api(
        K.CREATE_TOPICS,
        create_topics.handle,
        create_topics.authorize,
        cluster(CREATE) + topic(CREATE),
    ),
    Api(K.DELETE_TOPICS, delete_topics.handle, delete_topics.authorize, topic(DELETE)),
    Api(K.DELETE_RECORDS, delete_records.handle, delete_records.authorize, topic(DELETE)),
    Api(
        K.DESCRIBE_CONFIGS,
        describe_configs.handle,
        describe_configs.authorize,
        topic(DESCRIBE_CONFIGS) + cluster(DESCRIBE_CONFIGS),
    ),
    Api(K.CREATE_PARTITIONS, create_partitions.handle, create_partitions.authorize, topic(ALTER)),
    Api(
        K.ALTER_CONFIGS,
        alter_configs.handle,
        alter_configs.authorize,
        topic(ALTER_CONFIGS) + cluster(ALTER_CONFIGS),
    ),
    Api(
        K.INCREMENTAL_ALTER_CONFIGS,
        incremental_alter_configs.handle,
        incremental_alter_configs.authorize,
        topic(ALTER_CONFIGS) + cluster(ALTER_CONFIGS),
    ),
    Api(
        K.OFFSET_FOR_LEADER_EPOCH,
        offset_for_leader_epoch.handle,
        offset_for_leader_epoch.authorize,
        topic(DESCRIBE) + cluster(CLUSTER_ACTION),
    ),
    # Without a transactional id: IdempotentWrite on the cluster or Write on some topic.
    Api(
        K.INIT_PRODUCER_ID,
        init_producer_id.handle,
        init_producer_id.authorize,
        transactional_id(WRITE) + cluster(IDEMPOTENT_WRITE) + topic(WRITE),
    ),
    # Transactions (data_plane.coordinator.transaction_*, docs/transactions.md).
    Api(
        K.ADD_PARTITIONS_TO_TXN,
        add_partitions_to_txn.handle,
        add_partitions_to_txn.authorize,
        transactional_id(WRITE) + topic(WRITE) + cluster(CLUSTER_ACTION),
    ),
    Api(
        K.ADD_OFFSETS_TO_TXN,
        add_offsets_to_txn.handle,
        add_offsets_to_txn.authorize,
        transactional_id(WRITE) + group(READ),
    ),
    Api(K.END_TXN, end_txn.handle, end_txn.authorize, transactional_id(WRITE)),
    Api(
        K.WRITE_TXN_MARKERS,
        write_txn_markers.handle,
        write_txn_markers.authorize,
        cluster(CLUSTER_ACTION),
    ),
    Api(
        K.TXN_OFFSET_COMMIT,
        txn_offset_commit.handle,
        txn_offset_commit.authorize,
        transactional_id(WRITE) + group(READ) + topic(READ),
    ),
    Api(
        K.DESCRIBE_TRANSACTIONS,
        describe_transactions.handle,
        describe_transactions.authorize,
        transactional_id(DESCRIBE),
    ),
    Api(
        K.LIST_TRANSACTIONS,
        list_transactions.handle,
        list_transactions.authorize,
        transactional_id(DESCRIBE),
    ),
    Api(K.DESCRIBE_PRODUCERS, describe_producers.handle, describe_producers.authorize, topic(READ)),
    Api(
        K.DESCRIBE_LOG_DIRS,
        describe_log_dirs.handle,
        describe_log_dirs.authorize,
        cluster(DESCRIBE),
    ),
    Api(K.ELECT_LEADERS, elect_leaders.handle, elect_leaders.authorize, cluster(ALTER)),
    # Partition reassignment (metadata.reassignment, docs/reassignment.md), forwarded.
    Api(
        K.ALTER_PARTITION_REASSIGNMENTS,
        alter_partition_reassignments.handle,
        alter_partition_reassignments.authorize,
        cluster(ALTER),
    ),
    Api(
        K.LIST_PARTITION_REASSIGNMENTS,
        list_partition_reassignments.handle,
        list_partition_reassignments.authorize,
        cluster(DESCRIBE),
    ),
    # Describe on the cluster gates the authorized operations it may answer.
    Api(K.DESCRIBE_CLUSTER, describe_cluster.handle, describe_cluster.authorize, cluster(DESCRIBE)),
    Api(K.DESCRIBE_QUORUM, describe_quorum.handle, describe_quorum.authorize, cluster(DESCRIBE)),
    Api(
        K.OFFSET_DELETE,
        offset_delete.handle,
        offset_delete.authorize,
        group(DELETE) + topic(READ),
    ),
    Api(
        K.DESCRIBE_USER_SCRAM_CREDENTIALS,
        describe_user_scram_credentials.handle,
        describe_user_scram_credentials.authorize,
        cluster(DESCRIBE),
    ),
    Api(
        K.DESCRIBE_TOPIC_PARTITIONS,
        describe_topic_partitions.handle,
        describe_topic_partitions.authorize,
        topic(DESCRIBE),
    ),
    Api(
        K.ALTER_USER_SCRAM_CREDENTIALS,
        alter_user_scram_credentials.handle,
        alter_user_scram_credentials.authorize,
        cluster(ALTER),
    ),
    Api(K.UPDATE_FEATURES, update_features.handle, update_features.authorize, cluster(ALTER)),
    # ACLs (docs/security.md): v0 is no longer served by Kafka 4 (KIP-896).
    Api(
        K.DESCRIBE_ACLS,
        describe_acls.handle,
        describe_acls.authorize,
        cluster(DESCRIBE),
        min_version=1,
    ),
    Api(K.CREATE_ACLS, create_acls.handle, create_acls.authorize, cluster(ALTER), min_version=1),
    Api(K.DELETE_ACLS, delete_acls.handle, delete_acls.authorize, cluster(ALTER), min_version=1),
    # Client quotas (docs/security.md), as kafka-configs.sh reads and sets them.
    Api(
        K.DESCRIBE_CLIENT_QUOTAS,
        describe_client_quotas.handle,
        describe_client_quotas.authorize,
        cluster(DESCRIBE_CONFIGS),
    ),
    Api(
        K.ALTER_CLIENT_QUOTAS,
        alter_client_quotas.handle,
        alter_client_quotas.authorize,
        cluster(ALTER_CONFIGS),
    ),
    # Consumer groups (data_plane.coordinator, docs/groups.md).
    Api(
        K.FIND_COORDINATOR,
        find_coordinator.handle,
        find_coordinator.authorize,
        group(DESCRIBE) + transactional_id(DESCRIBE),
    ),
    Api(K.JOIN_GROUP, join_group.handle, join_group.authorize, group(READ)),
    Api(K.SYNC_GROUP, sync_group.handle, sync_group.authorize, group(READ)),
    Api(K.HEARTBEAT, heartbeat.handle, heartbeat.authorize, group(READ)),
    Api(K.LEAVE_GROUP, leave_group.handle, leave_group.authorize, group(READ)),
    Api(
        K.OFFSET_COMMIT,
        offset_commit.handle,
        offset_commit.authorize,
        group(READ) + topic(READ),
    ),
    Api(
        K.OFFSET_FETCH,
        offset_fetch.handle,
        offset_fetch.authorize,
        group(DESCRIBE) + topic(DESCRIBE),
    ),
    Api(K.DESCRIBE_GROUPS, describe_groups.handle, describe_groups.authorize, group(DESCRIBE)),
    # Describe on the cluster lists every group, else the groups it may describe.
    Api(
        K.LIST_GROUPS,
        list_groups.handle,
        list_groups.authorize,
        cluster(DESCRIBE) + group(DESCRIBE),
    ),
    Api(K.DELETE_GROUPS, delete_groups.handle, delete_groups.authorize, group(DELETE)),
    # KIP-848 consumer groups (data_plane.coordinator.consumer_group).
    Api(
        K.CONSUMER_GROUP_HEARTBEAT,
        consumer_group_heartbeat.handle,
        consumer_group_heartbeat.authorize,
        group(READ),
    ),
    Api(
        K.CONSUMER_GROUP_DESCRIBE,
        consumer_group_describe.handle,
        consumer_group_describe.authorize,
        group(DESCRIBE),
    ),
    # Answered by the SASL layer (data_plane.security) before any handler on SASL listeners.
    Api(K.SASL_HANDSHAKE, sasl_not_enabled, unchecked, ()),
    Api(K.SASL_AUTHENTICATE, sasl_not_enabled, unchecked, ()),
)


def authorization_rules() -> dict[int, AuthorizationRule]:
    """api key -> the API's authorization rule, for the RequestAuthorizer."""
    return {int(key): api.authorize for key, api in HANDLERS.items()}


def advertised() -> dict[ApiKey, tuple[int, int]]:
    """api key -> (min, max) version this broker answers."""
    out = {}
    for key, api in HANDLERS.items():
        lo, hi = SUPPORTED_VERSIONS[key]
        lo = max(lo, api.min_version)
        if lo <= hi:
            out[key] = (lo, hi)
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
    return entry.handler
