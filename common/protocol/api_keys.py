"""Kafka API keys and the versions this codec implements.

Names and numbers are Apache Kafka's ``ApiKeys`` (the ``apiKey`` of each message schema).
``SUPPORTED_VERSIONS`` lists what :mod:`common.protocol.codec` can decode and encode: every
API of docs/protocol.md, from version 0 up to the version given below, in the non-flexible and
the flexible encodings (``common.protocol.schemas.FLEXIBLE_SINCE``). A broker advertises
the subset it has handlers for (it filters this table); a client may use any listed version.
"""

from __future__ import annotations

from enum import IntEnum


class ApiKey(IntEnum):
    """Kafka request types (``org.apache.kafka.common.protocol.ApiKeys``)."""

    PRODUCE = 0
    FETCH = 1
    LIST_OFFSETS = 2
    METADATA = 3
    LEADER_AND_ISR = 4
    STOP_REPLICA = 5
    UPDATE_METADATA = 6
    CONTROLLED_SHUTDOWN = 7
    OFFSET_COMMIT = 8
    OFFSET_FETCH = 9
    FIND_COORDINATOR = 10
    JOIN_GROUP = 11
    HEARTBEAT = 12
    LEAVE_GROUP = 13
    SYNC_GROUP = 14
    DESCRIBE_GROUPS = 15
    LIST_GROUPS = 16
    SASL_HANDSHAKE = 17
    API_VERSIONS = 18
    CREATE_TOPICS = 19
    DELETE_TOPICS = 20
    DELETE_RECORDS = 21
    INIT_PRODUCER_ID = 22
    OFFSET_FOR_LEADER_EPOCH = 23
    ADD_PARTITIONS_TO_TXN = 24
    ADD_OFFSETS_TO_TXN = 25
    END_TXN = 26
    WRITE_TXN_MARKERS = 27
    TXN_OFFSET_COMMIT = 28
    DESCRIBE_ACLS = 29
    CREATE_ACLS = 30
    DELETE_ACLS = 31
    DESCRIBE_CONFIGS = 32
    ALTER_CONFIGS = 33
    ALTER_REPLICA_LOG_DIRS = 34
    DESCRIBE_LOG_DIRS = 35
    SASL_AUTHENTICATE = 36
    CREATE_PARTITIONS = 37
    CREATE_DELEGATION_TOKEN = 38
    RENEW_DELEGATION_TOKEN = 39
    EXPIRE_DELEGATION_TOKEN = 40
    DESCRIBE_DELEGATION_TOKEN = 41
    DELETE_GROUPS = 42
    ELECT_LEADERS = 43
    INCREMENTAL_ALTER_CONFIGS = 44
    ALTER_PARTITION_REASSIGNMENTS = 45
    LIST_PARTITION_REASSIGNMENTS = 46
    OFFSET_DELETE = 47
    DESCRIBE_CLIENT_QUOTAS = 48
    ALTER_CLIENT_QUOTAS = 49
    DESCRIBE_USER_SCRAM_CREDENTIALS = 50
    ALTER_USER_SCRAM_CREDENTIALS = 51
    VOTE = 52
    BEGIN_QUORUM_EPOCH = 53
    END_QUORUM_EPOCH = 54
    DESCRIBE_QUORUM = 55
    ALTER_PARTITION = 56
    UPDATE_FEATURES = 57
    ENVELOPE = 58
    FETCH_SNAPSHOT = 59
    DESCRIBE_CLUSTER = 60
    DESCRIBE_PRODUCERS = 61
    BROKER_REGISTRATION = 62
    BROKER_HEARTBEAT = 63
    UNREGISTER_BROKER = 64
    DESCRIBE_TRANSACTIONS = 65
    LIST_TRANSACTIONS = 66
    ALLOCATE_PRODUCER_IDS = 67
    CONSUMER_GROUP_HEARTBEAT = 68
    CONSUMER_GROUP_DESCRIBE = 69
    DESCRIBE_TOPIC_PARTITIONS = 75


# (min, max) version per API. An API not yet served in flexible form stops one below its first
# flexible version; the others go as far as their entries say.
SUPPORTED_VERSIONS: dict[ApiKey, tuple[int, int]] = {
    # v8 answers per-record errors (none are raised: a bad batch fails whole) and an error
    # message; v9 is flexible; v10 adds leader hints to not-the-leader errors (KIP-951); v11
    # may answer TRANSACTION_ABORTABLE (KIP-890), which kraftlog does not need to.
    ApiKey.PRODUCE: (0, 11),
    # v12 is flexible and checks the follower's last fetched epoch (diverging_epoch); v13+
    # names topics by id (KIP-516); v15 carries the replica in a tagged ReplicaState; v16 adds
    # leader hints to not-the-leader errors (KIP-951); v17's directory id is not used.
    ApiKey.FETCH: (0, 17),
    # v7 lists by max timestamp (KIP-734), v8 earliest local (KIP-405), v9 latest tiered
    # (KIP-1005).
    ApiKey.LIST_OFFSETS: (0, 9),
    # v10 answers topic ids; v12 looks topics up by id (KIP-516).
    ApiKey.METADATA: (0, 12),
    # v9 carries a KIP-848 member epoch in generation_id_or_member_epoch.
    ApiKey.OFFSET_COMMIT: (0, 9),
    # v7 takes require_stable (KIP-447); v8 several groups at once (KIP-709); v9 a KIP-848
    # member id and epoch per group.
    ApiKey.OFFSET_FETCH: (0, 9),
    # v4 batches keys (KIP-699); v5 may answer TRANSACTION_ABORTABLE (KIP-890); v6 knows the
    # share-group key type (KIP-932), which kraftlog refuses (INVALID_REQUEST).
    ApiKey.FIND_COORDINATOR: (0, 6),
    # v7 answers the protocol type (KIP-559), v8 takes a reason (KIP-800), v9 answers
    # skip_assignment (KIP-814; always false: kraftlog always lets the leader assign).
    ApiKey.JOIN_GROUP: (0, 9),
    ApiKey.HEARTBEAT: (0, 4),
    # v3 removes several members at once, static ones by instance id (KIP-345); v4 flexible;
    # v5 gives a reason.
    ApiKey.LEAVE_GROUP: (0, 5),
    # v5 checks and answers the protocol type and name (KIP-559).
    ApiKey.SYNC_GROUP: (0, 5),
    ApiKey.DESCRIBE_GROUPS: (0, 5),
    # v4 filters by state, v5 by type (KIP-518, KIP-848).
    ApiKey.LIST_GROUPS: (0, 5),
    ApiKey.DELETE_GROUPS: (0, 2),
    # Not flexible in any version.
    ApiKey.OFFSET_DELETE: (0, 0),
    ApiKey.SASL_HANDSHAKE: (0, 1),
    # v3+ is flexible (client software name and version; feature levels as tagged fields).
    ApiKey.API_VERSIONS: (0, 4),
    # v5 is flexible and answers each topic's partitions, replication factor and configs
    # (KIP-525); v6 may throttle; v7 gives the topic id.
    ApiKey.CREATE_TOPICS: (0, 7),
    # v5 answers an error message; v6 deletes by name or by topic id.
    ApiKey.DELETE_TOPICS: (0, 6),
    ApiKey.DELETE_RECORDS: (0, 2),
    # v2+ flexible; v3 carries the producer id and epoch to bump (KIP-360); v4 answers
    # PRODUCER_FENCED; v5 may answer TRANSACTION_ABORTABLE (KIP-890), which kraftlog does not
    # need to (the same holds for AddPartitionsToTxn 5, AddOffsetsToTxn 4, EndTxn 4 and
    # TxnOffsetCommit 4).
    ApiKey.INIT_PRODUCER_ID: (0, 5),
    ApiKey.OFFSET_FOR_LEADER_EPOCH: (0, 4),
    # v3 is flexible; v4 batches transactions and verifies (KIP-890), between brokers.
    ApiKey.ADD_PARTITIONS_TO_TXN: (0, 5),
    ApiKey.ADD_OFFSETS_TO_TXN: (0, 4),
    ApiKey.END_TXN: (0, 4),
    ApiKey.WRITE_TXN_MARKERS: (0, 1),
    # v3: flexible, with the consumer group generation and member (KIP-447).
    ApiKey.TXN_OFFSET_COMMIT: (0, 4),
    ApiKey.DESCRIBE_CONFIGS: (0, 4),
    ApiKey.ALTER_CONFIGS: (0, 2),
    ApiKey.SASL_AUTHENTICATE: (0, 2),
    # v3 may answer THROTTLING_QUOTA_EXCEEDED (KIP-599; not raised here).
    ApiKey.CREATE_PARTITIONS: (0, 3),
    ApiKey.ELECT_LEADERS: (0, 2),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: (0, 1),
    # Partition reassignment (KIP-455), flexible only; AlterPartitionReassignments v1 may
    # refuse a change of replication factor (KIP-860).
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: (0, 1),
    ApiKey.LIST_PARTITION_REASSIGNMENTS: (0, 0),
    # v2+ flexible, v3 a top-level error, v4 each directory's total and usable bytes.
    ApiKey.DESCRIBE_LOG_DIRS: (0, 4),
    # Flexible from v0; v1 names the endpoint type (brokers only here).
    ApiKey.DESCRIBE_CLUSTER: (0, 1),
    # Flexible from v0; v1 fetch times (KIP-836), v2 nodes and directory ids (KIP-853).
    ApiKey.DESCRIBE_QUORUM: (0, 2),
    # Paginated topic description with ELRs (KIP-966), flexible only.
    ApiKey.DESCRIBE_TOPIC_PARTITIONS: (0, 0),
    # SCRAM credentials (KIP-554), flexible only.
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: (0, 0),
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: (0, 0),
    # Flexible from v0; v1 has UpgradeType and ValidateOnly (kafka-features.sh upgrade).
    ApiKey.UPDATE_FEATURES: (0, 1),
    # Flexible-only APIs (transaction tooling).
    ApiKey.DESCRIBE_PRODUCERS: (0, 0),
    ApiKey.DESCRIBE_TRANSACTIONS: (0, 0),
    ApiKey.LIST_TRANSACTIONS: (0, 2),
    # KIP-848 consumer groups, flexible only; heartbeat v1 subscribes by regex.
    ApiKey.CONSUMER_GROUP_HEARTBEAT: (0, 1),
    ApiKey.CONSUMER_GROUP_DESCRIBE: (0, 0),
    # ACLs: v1 adds the resource pattern type (KIP-290), v2 is flexible, v3 knows the user
    # resource type (KIP-554), which kraftlog's authorizer does not store.
    ApiKey.DESCRIBE_ACLS: (0, 3),
    ApiKey.CREATE_ACLS: (0, 3),
    ApiKey.DELETE_ACLS: (0, 3),
    # Client quotas (KIP-546): v1 is flexible.
    ApiKey.DESCRIBE_CLIENT_QUOTAS: (0, 1),
    ApiKey.ALTER_CLIENT_QUOTAS: (0, 1),
}

# FindCoordinator v4+ asks for several keys (of one key type) at once and is answered per key
# (KIP-699): ``coordinator_keys`` and ``coordinators`` instead of ``key`` and one answer.
FIND_COORDINATOR_BATCHED_SINCE = 4

# OffsetFetch v8+ names several groups, each answered with its own error code (KIP-709).
OFFSET_FETCH_GROUPS_SINCE = 8
