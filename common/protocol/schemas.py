"""Declarative schema tables: every supported request and response, in every supported version.

Facts transcribed from Apache Kafka's message schemas (``clients/src/main/resources/common/
message/*.json``, as shipped with kafka-python under ``kafka/protocol/schemas/resources``):
field names (CamelCase turned into snake_case), types, the versions each field exists in, the
versions it is nullable in, non-zero defaults and tags. ``FLEXIBLE_SINCE`` is each API's first
flexible version (compact encodings and tagged fields, KIP-482). Fields are listed in wire
order. Version bounds above the highest version this codec supports are dropped
(``until=None``).
"""

from __future__ import annotations

from common.protocol.api_keys import ApiKey
from common.protocol.fields import (
    ARRAY,
    BOOL,
    BYTES,
    FLOAT64,
    INT8,
    INT16,
    INT32,
    INT64,
    RECORDS,
    STRING,
    STRUCT,
    UINT16,
    UUID,
    F,
)


def _node_endpoints(since: int) -> F:
    """The tagged NodeEndpoints array of Produce and Fetch responses (KIP-951), from ``since``."""
    return F(
        "node_endpoints",
        [
            F("node_id", INT32, since),
            F("host", STRING, since),
            F("port", INT32, since),
            F("rack", STRING, since, nullable=since),
        ],
        since,
        tag=0,
    )


# The tables keep the nesting of the Kafka schemas; do not let the formatter explode them.
# fmt: off
# ProduceRequest: Kafka schema flexibleVersions 9+
PRODUCE_REQUEST = (
    F("transactional_id", STRING, 3, nullable=3),
    F("acks", INT16),
    F("timeout_ms", INT32),
    F("topic_data", [
        F("name", STRING),
        F("partition_data", [
            F("index", INT32),
            F("records", RECORDS, nullable=0),
        ]),
    ]),
)

# ProduceResponse: Kafka schema flexibleVersions 9+
PRODUCE_RESPONSE = (
    F("responses", [
        F("name", STRING),
        F("partition_responses", [
            F("index", INT32),
            F("error_code", INT16),
            F("base_offset", INT64),
            F("log_append_time_ms", INT64, 2, default=-1),
            F("log_start_offset", INT64, 5, default=-1),
            F("record_errors", [
                F("batch_index", INT32, 8),
                F("batch_index_error_message", STRING, 8, nullable=8),
            ], 8),
            F("error_message", STRING, 8, nullable=8),
            F("current_leader", STRUCT(
                F("leader_id", INT32, 10, default=-1),
                F("leader_epoch", INT32, 10, default=-1),
            ), 10, tag=0),
        ]),
    ]),
    F("throttle_time_ms", INT32, 1),
    _node_endpoints(10),
)

# FetchRequest: Kafka schema flexibleVersions 12+
FETCH_REQUEST = (
    F("cluster_id", STRING, 12, nullable=12, tag=0),
    F("replica_id", INT32, 0, 14, default=-1),
    F("replica_state", STRUCT(
        F("replica_id", INT32, 15, default=-1),
        F("replica_epoch", INT64, 15, default=-1),
    ), 15, tag=1),
    F("max_wait_ms", INT32),
    F("min_bytes", INT32),
    F("max_bytes", INT32, 3, default=0x7fffffff),
    F("isolation_level", INT8, 4),
    F("session_id", INT32, 7),
    F("session_epoch", INT32, 7, default=-1),
    F("topics", [
        F("topic", STRING, 0, 12),
        F("topic_id", UUID, 13),
        F("partitions", [
            F("partition", INT32),
            F("current_leader_epoch", INT32, 9, default=-1),
            F("fetch_offset", INT64),
            F("last_fetched_epoch", INT32, 12, default=-1),
            F("log_start_offset", INT64, 5, default=-1),
            F("partition_max_bytes", INT32),
            F("replica_directory_id", UUID, 17, tag=0),
        ]),
    ]),
    F("forgotten_topics_data", [
        F("topic", STRING, 7, 12),
        F("topic_id", UUID, 13),
        F("partitions", ARRAY(INT32), 7),
    ], 7),
    F("rack_id", STRING, 11),
)

# FetchResponse: Kafka schema flexibleVersions 12+
FETCH_RESPONSE = (
    F("throttle_time_ms", INT32, 1),
    F("error_code", INT16, 7),
    F("session_id", INT32, 7),
    F("responses", [
        F("topic", STRING, 0, 12),
        F("topic_id", UUID, 13),
        F("partitions", [
            F("partition_index", INT32),
            F("error_code", INT16),
            F("high_watermark", INT64),
            F("last_stable_offset", INT64, 4, default=-1),
            F("log_start_offset", INT64, 5, default=-1),
            F("diverging_epoch", STRUCT(
                F("epoch", INT32, 12, default=-1),
                F("end_offset", INT64, 12, default=-1),
            ), 12, tag=0),
            F("current_leader", STRUCT(
                F("leader_id", INT32, 12, default=-1),
                F("leader_epoch", INT32, 12, default=-1),
            ), 12, tag=1),
            F("snapshot_id", STRUCT(
                F("end_offset", INT64, default=-1),
                F("epoch", INT32, default=-1),
            ), 12, tag=2),
            F("aborted_transactions", [
                F("producer_id", INT64, 4),
                F("first_offset", INT64, 4),
            ], 4, nullable=4),
            F("preferred_read_replica", INT32, 11, default=-1),
            F("records", RECORDS, nullable=0),
        ]),
    ]),
    _node_endpoints(16),
)

# ListOffsetsRequest: Kafka schema flexibleVersions 6+
LIST_OFFSETS_REQUEST = (
    F("replica_id", INT32),
    F("isolation_level", INT8, 2),
    F("topics", [
        F("name", STRING),
        F("partitions", [
            F("partition_index", INT32),
            F("current_leader_epoch", INT32, 4, default=-1),
            F("timestamp", INT64),
            F("max_num_offsets", INT32, 0, 0, default=1),
        ]),
    ]),
)

# ListOffsetsResponse: Kafka schema flexibleVersions 6+
LIST_OFFSETS_RESPONSE = (
    F("throttle_time_ms", INT32, 2),
    F("topics", [
        F("name", STRING),
        F("partitions", [
            F("partition_index", INT32),
            F("error_code", INT16),
            F("old_style_offsets", ARRAY(INT64), 0, 0),
            F("timestamp", INT64, 1, default=-1),
            F("offset", INT64, 1, default=-1),
            F("leader_epoch", INT32, 4, default=-1),
        ]),
    ]),
)

# MetadataRequest: Kafka schema flexibleVersions 9+
METADATA_REQUEST = (
    F("topics", [
        F("topic_id", UUID, 10),
        F("name", STRING, nullable=10),
    ], nullable=1),
    F("allow_auto_topic_creation", BOOL, 4, default=True),
    F("include_cluster_authorized_operations", BOOL, 8, 10),
    F("include_topic_authorized_operations", BOOL, 8),
)

# MetadataResponse: Kafka schema flexibleVersions 9+
METADATA_RESPONSE = (
    F("throttle_time_ms", INT32, 3),
    F("brokers", [
        F("node_id", INT32),
        F("host", STRING),
        F("port", INT32),
        F("rack", STRING, 1, nullable=1),
    ]),
    F("cluster_id", STRING, 2, nullable=2),
    F("controller_id", INT32, 1, default=-1),
    F("topics", [
        F("error_code", INT16),
        F("name", STRING, nullable=12),
        F("topic_id", UUID, 10),
        F("is_internal", BOOL, 1),
        F("partitions", [
            F("error_code", INT16),
            F("partition_index", INT32),
            F("leader_id", INT32),
            F("leader_epoch", INT32, 7, default=-1),
            F("replica_nodes", ARRAY(INT32)),
            F("isr_nodes", ARRAY(INT32)),
            F("offline_replicas", ARRAY(INT32), 5),
        ]),
        F("topic_authorized_operations", INT32, 8, default=-2147483648),
    ]),
    F("cluster_authorized_operations", INT32, 8, 10, default=-2147483648),
)

# OffsetCommitRequest: Kafka schema flexibleVersions 8+
OFFSET_COMMIT_REQUEST = (
    F("group_id", STRING),
    F("generation_id_or_member_epoch", INT32, 1, default=-1),
    F("member_id", STRING, 1),
    F("group_instance_id", STRING, 7, nullable=7),
    F("retention_time_ms", INT64, 2, 4, default=-1),
    F("topics", [
        F("name", STRING),
        F("partitions", [
            F("partition_index", INT32),
            F("committed_offset", INT64),
            F("committed_leader_epoch", INT32, 6, default=-1),
            F("commit_timestamp", INT64, 1, 1, default=-1),
            F("committed_metadata", STRING, nullable=0),
        ]),
    ]),
)

# OffsetCommitResponse: Kafka schema flexibleVersions 8+
OFFSET_COMMIT_RESPONSE = (
    F("throttle_time_ms", INT32, 3),
    F("topics", [
        F("name", STRING),
        F("partitions", [
            F("partition_index", INT32),
            F("error_code", INT16),
        ]),
    ]),
)

# OffsetFetchRequest: Kafka schema flexibleVersions 6+
OFFSET_FETCH_REQUEST = (
    F("group_id", STRING, 0, 7),
    F("topics", [
        F("name", STRING, 0, 7),
        F("partition_indexes", ARRAY(INT32), 0, 7),
    ], 0, 7, nullable=2),
    F("groups", [
        F("group_id", STRING, 8),
        F("member_id", STRING, 9, nullable=9),
        F("member_epoch", INT32, 9, default=-1),
        F("topics", [
            F("name", STRING, 8),
            F("partition_indexes", ARRAY(INT32), 8),
        ], 8, nullable=8),
    ], 8),
    F("require_stable", BOOL, 7),
)

# OffsetFetchResponse: Kafka schema flexibleVersions 6+
OFFSET_FETCH_RESPONSE = (
    F("throttle_time_ms", INT32, 3),
    F("topics", [
        F("name", STRING, 0, 7),
        F("partitions", [
            F("partition_index", INT32, 0, 7),
            F("committed_offset", INT64, 0, 7),
            F("committed_leader_epoch", INT32, 5, 7, default=-1),
            F("metadata", STRING, 0, 7, nullable=0),
            F("error_code", INT16, 0, 7),
        ], 0, 7),
    ], 0, 7),
    F("error_code", INT16, 2, 7),
    F("groups", [
        F("group_id", STRING, 8),
        F("topics", [
            F("name", STRING, 8),
            F("partitions", [
                F("partition_index", INT32, 8),
                F("committed_offset", INT64, 8),
                F("committed_leader_epoch", INT32, 8, default=-1),
                F("metadata", STRING, 8, nullable=8),
                F("error_code", INT16, 8),
            ], 8),
        ], 8),
        F("error_code", INT16, 8),
    ], 8),
)

# FindCoordinatorRequest: Kafka schema flexibleVersions 3+
FIND_COORDINATOR_REQUEST = (
    F("key", STRING, 0, 3),
    F("key_type", INT8, 1),
    F("coordinator_keys", ARRAY(STRING), 4),
)

# FindCoordinatorResponse: Kafka schema flexibleVersions 3+
FIND_COORDINATOR_RESPONSE = (
    F("throttle_time_ms", INT32, 1),
    F("error_code", INT16, 0, 3),
    F("error_message", STRING, 1, 3, nullable=1),
    F("node_id", INT32, 0, 3),
    F("host", STRING, 0, 3),
    F("port", INT32, 0, 3),
    F("coordinators", [
        F("key", STRING, 4),
        F("node_id", INT32, 4),
        F("host", STRING, 4),
        F("port", INT32, 4),
        F("error_code", INT16, 4),
        F("error_message", STRING, 4, nullable=4),
    ], 4),
)

# JoinGroupRequest: Kafka schema flexibleVersions 6+
JOIN_GROUP_REQUEST = (
    F("group_id", STRING),
    F("session_timeout_ms", INT32),
    F("rebalance_timeout_ms", INT32, 1, default=-1),
    F("member_id", STRING),
    F("group_instance_id", STRING, 5, nullable=5),
    F("protocol_type", STRING),
    F("protocols", [
        F("name", STRING),
        F("metadata", BYTES),
    ]),
    F("reason", STRING, 8, nullable=8),
)

# JoinGroupResponse: Kafka schema flexibleVersions 6+
JOIN_GROUP_RESPONSE = (
    F("throttle_time_ms", INT32, 2),
    F("error_code", INT16),
    F("generation_id", INT32, default=-1),
    F("protocol_type", STRING, 7, nullable=7),
    F("protocol_name", STRING, nullable=7),
    F("leader", STRING),
    F("skip_assignment", BOOL, 9),
    F("member_id", STRING),
    F("members", [
        F("member_id", STRING),
        F("group_instance_id", STRING, 5, nullable=5),
        F("metadata", BYTES),
    ]),
)

# HeartbeatRequest: Kafka schema flexibleVersions 4+
HEARTBEAT_REQUEST = (
    F("group_id", STRING),
    F("generation_id", INT32),
    F("member_id", STRING),
    F("group_instance_id", STRING, 3, nullable=3),
)

# HeartbeatResponse: Kafka schema flexibleVersions 4+
HEARTBEAT_RESPONSE = (
    F("throttle_time_ms", INT32, 1),
    F("error_code", INT16),
)

# LeaveGroupRequest: Kafka schema flexibleVersions 4+
LEAVE_GROUP_REQUEST = (
    F("group_id", STRING),
    F("member_id", STRING, 0, 2),
    F("members", [
        F("member_id", STRING, 3),
        F("group_instance_id", STRING, 3, nullable=3),
        F("reason", STRING, 5, nullable=5),
    ], 3),
)

# LeaveGroupResponse: Kafka schema flexibleVersions 4+
LEAVE_GROUP_RESPONSE = (
    F("throttle_time_ms", INT32, 1),
    F("error_code", INT16),
    F("members", [
        F("member_id", STRING, 3),
        F("group_instance_id", STRING, 3, nullable=3),
        F("error_code", INT16, 3),
    ], 3),
)

# SyncGroupRequest: Kafka schema flexibleVersions 4+
SYNC_GROUP_REQUEST = (
    F("group_id", STRING),
    F("generation_id", INT32),
    F("member_id", STRING),
    F("group_instance_id", STRING, 3, nullable=3),
    F("protocol_type", STRING, 5, nullable=5),
    F("protocol_name", STRING, 5, nullable=5),
    F("assignments", [
        F("member_id", STRING),
        F("assignment", BYTES),
    ]),
)

# SyncGroupResponse: Kafka schema flexibleVersions 4+
SYNC_GROUP_RESPONSE = (
    F("throttle_time_ms", INT32, 1),
    F("error_code", INT16),
    F("protocol_type", STRING, 5, nullable=5),
    F("protocol_name", STRING, 5, nullable=5),
    F("assignment", BYTES),
)

# DescribeGroupsRequest: Kafka schema flexibleVersions 5+
DESCRIBE_GROUPS_REQUEST = (
    F("groups", ARRAY(STRING)),
    F("include_authorized_operations", BOOL, 3),
)

# DescribeGroupsResponse: Kafka schema flexibleVersions 5+
DESCRIBE_GROUPS_RESPONSE = (
    F("throttle_time_ms", INT32, 1),
    F("groups", [
        F("error_code", INT16),
        F("group_id", STRING),
        F("group_state", STRING),
        F("protocol_type", STRING),
        F("protocol_data", STRING),
        F("members", [
            F("member_id", STRING),
            F("group_instance_id", STRING, 4, nullable=4),
            F("client_id", STRING),
            F("client_host", STRING),
            F("member_metadata", BYTES),
            F("member_assignment", BYTES),
        ]),
        F("authorized_operations", INT32, 3, default=-2147483648),
    ]),
)

# ListGroupsRequest: Kafka schema flexibleVersions 3+
LIST_GROUPS_REQUEST = (
    F("states_filter", ARRAY(STRING), 4),
    F("types_filter", ARRAY(STRING), 5),
)

# ListGroupsResponse: Kafka schema flexibleVersions 3+
LIST_GROUPS_RESPONSE = (
    F("throttle_time_ms", INT32, 1),
    F("error_code", INT16),
    F("groups", [
        F("group_id", STRING),
        F("protocol_type", STRING),
        F("group_state", STRING, 4),
        F("group_type", STRING, 5),
    ]),
)

# DeleteGroupsRequest: Kafka schema flexibleVersions 2+
DELETE_GROUPS_REQUEST = (
    F("groups_names", ARRAY(STRING)),
)

# DeleteGroupsResponse: Kafka schema flexibleVersions 2+
DELETE_GROUPS_RESPONSE = (
    F("throttle_time_ms", INT32),
    F("results", [
        F("group_id", STRING),
        F("error_code", INT16),
    ]),
)

# ApiVersionsRequest: Kafka schema flexibleVersions 3+
API_VERSIONS_REQUEST = (
    F("client_software_name", STRING, 3),
    F("client_software_version", STRING, 3),
)

# ApiVersionsResponse: Kafka schema flexibleVersions 3+ (the response header stays v0)
API_VERSIONS_RESPONSE = (
    F("error_code", INT16),
    F("api_keys", [
        F("api_key", INT16),
        F("min_version", INT16),
        F("max_version", INT16),
    ]),
    F("throttle_time_ms", INT32, 1),
    F("supported_features", [
        F("name", STRING, 3),
        F("min_version", INT16, 3),
        F("max_version", INT16, 3),
    ], 3, tag=0),
    F("finalized_features_epoch", INT64, 3, default=-1, tag=1),
    F("finalized_features", [
        F("name", STRING, 3),
        F("max_version_level", INT16, 3),
        F("min_version_level", INT16, 3),
    ], 3, tag=2),
    F("zk_migration_ready", BOOL, 3, tag=3),
)

# CreateTopicsRequest: Kafka schema flexibleVersions 5+
CREATE_TOPICS_REQUEST = (
    F("topics", [
        F("name", STRING),
        F("num_partitions", INT32),
        F("replication_factor", INT16),
        F("assignments", [
            F("partition_index", INT32),
            F("broker_ids", ARRAY(INT32)),
        ]),
        F("configs", [
            F("name", STRING),
            F("value", STRING, nullable=0),
        ]),
    ]),
    F("timeout_ms", INT32, default=60000),
    F("validate_only", BOOL, 1),
)

# CreateTopicsResponse: Kafka schema flexibleVersions 5+
CREATE_TOPICS_RESPONSE = (
    F("throttle_time_ms", INT32, 2),
    F("topics", [
        F("name", STRING),
        F("topic_id", UUID, 7),
        F("error_code", INT16),
        F("error_message", STRING, 1, nullable=0),
        F("topic_config_error_code", INT16, 5, tag=0),
        F("num_partitions", INT32, 5, default=-1),
        F("replication_factor", INT16, 5, default=-1),
        F("configs", [
            F("name", STRING, 5),
            F("value", STRING, 5, nullable=5),
            F("read_only", BOOL, 5),
            F("config_source", INT8, 5, default=-1),
            F("is_sensitive", BOOL, 5),
        ], 5, nullable=5),
    ]),
)

# DeleteTopicsRequest: Kafka schema flexibleVersions 4+
DELETE_TOPICS_REQUEST = (
    F("topics", [
        F("name", STRING, 6, nullable=6),
        F("topic_id", UUID, 6),
    ], 6),
    F("topic_names", ARRAY(STRING), 0, 5),
    F("timeout_ms", INT32),
)

# DeleteTopicsResponse: Kafka schema flexibleVersions 4+
DELETE_TOPICS_RESPONSE = (
    F("throttle_time_ms", INT32, 1),
    F("responses", [
        F("name", STRING, nullable=6),
        F("topic_id", UUID, 6),
        F("error_code", INT16),
        F("error_message", STRING, 5, nullable=5),
    ]),
)

# DeleteRecordsRequest: Kafka schema flexibleVersions 2+
DELETE_RECORDS_REQUEST = (
    F("topics", [
        F("name", STRING),
        F("partitions", [
            F("partition_index", INT32),
            F("offset", INT64),
        ]),
    ]),
    F("timeout_ms", INT32),
)

# DeleteRecordsResponse: Kafka schema flexibleVersions 2+
DELETE_RECORDS_RESPONSE = (
    F("throttle_time_ms", INT32),
    F("topics", [
        F("name", STRING),
        F("partitions", [
            F("partition_index", INT32),
            F("low_watermark", INT64),
            F("error_code", INT16),
        ]),
    ]),
)

# InitProducerIdRequest: Kafka schema flexibleVersions 2+
INIT_PRODUCER_ID_REQUEST = (
    F("transactional_id", STRING, nullable=0),
    F("transaction_timeout_ms", INT32),
    F("producer_id", INT64, 3, default=-1),
    F("producer_epoch", INT16, 3, default=-1),
)

# InitProducerIdResponse: Kafka schema flexibleVersions 2+
INIT_PRODUCER_ID_RESPONSE = (
    F("throttle_time_ms", INT32),
    F("error_code", INT16),
    F("producer_id", INT64, default=-1),
    F("producer_epoch", INT16),
)

# AddPartitionsToTxnRequest: Kafka schema flexibleVersions 3+ (v4+ batch transactions;
# Kafka names the v0-3 fields "V3AndBelow...")
_ADD_PARTITIONS_TO_TXN_TOPIC = (
    F("name", STRING),
    F("partitions", ARRAY(INT32)),
)
ADD_PARTITIONS_TO_TXN_REQUEST = (
    F("transactions", [
        F("transactional_id", STRING, 4),
        F("producer_id", INT64, 4),
        F("producer_epoch", INT16, 4),
        F("verify_only", BOOL, 4),
        F("topics", _ADD_PARTITIONS_TO_TXN_TOPIC, 4),
    ], 4),
    F("v3_and_below_transactional_id", STRING, 0, 3),
    F("v3_and_below_producer_id", INT64, 0, 3),
    F("v3_and_below_producer_epoch", INT16, 0, 3),
    F("v3_and_below_topics", _ADD_PARTITIONS_TO_TXN_TOPIC, 0, 3),
)

# AddPartitionsToTxnResponse: Kafka schema flexibleVersions 3+
_ADD_PARTITIONS_TO_TXN_TOPIC_RESULT = (
    F("name", STRING),
    F("results_by_partition", [
        F("partition_index", INT32),
        F("partition_error_code", INT16),
    ]),
)
ADD_PARTITIONS_TO_TXN_RESPONSE = (
    F("throttle_time_ms", INT32),
    F("error_code", INT16, 4),
    F("results_by_transaction", [
        F("transactional_id", STRING, 4),
        F("topic_results", _ADD_PARTITIONS_TO_TXN_TOPIC_RESULT, 4),
    ], 4),
    F("results_by_topic_v3_and_below", _ADD_PARTITIONS_TO_TXN_TOPIC_RESULT, 0, 3),
)

# AddOffsetsToTxnRequest: Kafka schema flexibleVersions 3+
ADD_OFFSETS_TO_TXN_REQUEST = (
    F("transactional_id", STRING),
    F("producer_id", INT64),
    F("producer_epoch", INT16),
    F("group_id", STRING),
)

# AddOffsetsToTxnResponse: Kafka schema flexibleVersions 3+
ADD_OFFSETS_TO_TXN_RESPONSE = (
    F("throttle_time_ms", INT32),
    F("error_code", INT16),
)

# EndTxnRequest: Kafka schema flexibleVersions 3+
END_TXN_REQUEST = (
    F("transactional_id", STRING),
    F("producer_id", INT64),
    F("producer_epoch", INT16),
    F("committed", BOOL),
)

# EndTxnResponse: Kafka schema flexibleVersions 3+
END_TXN_RESPONSE = (
    F("throttle_time_ms", INT32),
    F("error_code", INT16),
)

# WriteTxnMarkersRequest: Kafka schema flexibleVersions 1+
WRITE_TXN_MARKERS_REQUEST = (
    F("markers", [
        F("producer_id", INT64),
        F("producer_epoch", INT16),
        F("transaction_result", BOOL),
        F("topics", [
            F("name", STRING),
            F("partition_indexes", ARRAY(INT32)),
        ]),
        F("coordinator_epoch", INT32),
    ]),
)

# WriteTxnMarkersResponse: Kafka schema flexibleVersions 1+
WRITE_TXN_MARKERS_RESPONSE = (
    F("markers", [
        F("producer_id", INT64),
        F("topics", [
            F("name", STRING),
            F("partitions", [
                F("partition_index", INT32),
                F("error_code", INT16),
            ]),
        ]),
    ]),
)

# TxnOffsetCommitRequest: Kafka schema flexibleVersions 3+ (v3 adds KIP-447 group metadata)
TXN_OFFSET_COMMIT_REQUEST = (
    F("transactional_id", STRING),
    F("group_id", STRING),
    F("producer_id", INT64),
    F("producer_epoch", INT16),
    F("generation_id", INT32, 3, default=-1),
    F("member_id", STRING, 3),
    F("group_instance_id", STRING, 3, nullable=3),
    F("topics", [
        F("name", STRING),
        F("partitions", [
            F("partition_index", INT32),
            F("committed_offset", INT64),
            F("committed_leader_epoch", INT32, 2, default=-1),
            F("committed_metadata", STRING, nullable=0),
        ]),
    ]),
)

# TxnOffsetCommitResponse: Kafka schema flexibleVersions 3+
TXN_OFFSET_COMMIT_RESPONSE = (
    F("throttle_time_ms", INT32),
    F("topics", [
        F("name", STRING),
        F("partitions", [
            F("partition_index", INT32),
            F("error_code", INT16),
        ]),
    ]),
)

# OffsetForLeaderEpochRequest: Kafka schema flexibleVersions 4+
OFFSET_FOR_LEADER_EPOCH_REQUEST = (
    F("replica_id", INT32, 3, default=-2),
    F("topics", [
        F("topic", STRING),
        F("partitions", [
            F("partition", INT32),
            F("current_leader_epoch", INT32, 2, default=-1),
            F("leader_epoch", INT32),
        ]),
    ]),
)

# OffsetForLeaderEpochResponse: Kafka schema flexibleVersions 4+
OFFSET_FOR_LEADER_EPOCH_RESPONSE = (
    F("throttle_time_ms", INT32, 2),
    F("topics", [
        F("topic", STRING),
        F("partitions", [
            F("error_code", INT16),
            F("partition", INT32),
            F("leader_epoch", INT32, 1, default=-1),
            F("end_offset", INT64, default=-1),
        ]),
    ]),
)

# DescribeConfigsRequest: Kafka schema flexibleVersions 4+
DESCRIBE_CONFIGS_REQUEST = (
    F("resources", [
        F("resource_type", INT8),
        F("resource_name", STRING),
        F("configuration_keys", ARRAY(STRING), nullable=0),
    ]),
    F("include_synonyms", BOOL, 1),
    F("include_documentation", BOOL, 3),
)

# DescribeConfigsResponse: Kafka schema flexibleVersions 4+
DESCRIBE_CONFIGS_RESPONSE = (
    F("throttle_time_ms", INT32),
    F("results", [
        F("error_code", INT16),
        F("error_message", STRING, nullable=0),
        F("resource_type", INT8),
        F("resource_name", STRING),
        F("configs", [
            F("name", STRING),
            F("value", STRING, nullable=0),
            F("read_only", BOOL),
            F("config_source", INT8, 1, default=-1),
            F("is_default", BOOL, 0, 0),
            F("is_sensitive", BOOL),
            F("synonyms", [
                F("name", STRING, 1),
                F("value", STRING, 1, nullable=0),
                F("source", INT8, 1),
            ], 1),
            F("config_type", INT8, 3),
            F("documentation", STRING, 3, nullable=0),
        ]),
    ]),
)

# AlterConfigsRequest: Kafka schema flexibleVersions 2+
ALTER_CONFIGS_REQUEST = (
    F("resources", [
        F("resource_type", INT8),
        F("resource_name", STRING),
        F("configs", [
            F("name", STRING),
            F("value", STRING, nullable=0),
        ]),
    ]),
    F("validate_only", BOOL),
)

# AlterConfigsResponse: Kafka schema flexibleVersions 2+
ALTER_CONFIGS_RESPONSE = (
    F("throttle_time_ms", INT32),
    F("responses", [
        F("error_code", INT16),
        F("error_message", STRING, nullable=0),
        F("resource_type", INT8),
        F("resource_name", STRING),
    ]),
)

# IncrementalAlterConfigsRequest: Kafka schema flexibleVersions 1+
INCREMENTAL_ALTER_CONFIGS_REQUEST = (
    F("resources", [
        F("resource_type", INT8),
        F("resource_name", STRING),
        F("configs", [
            F("name", STRING),
            F("config_operation", INT8),
            F("value", STRING, nullable=0),
        ]),
    ]),
    F("validate_only", BOOL),
)

# IncrementalAlterConfigsResponse: Kafka schema flexibleVersions 1+; the same fields as
# AlterConfigsResponse in every version.
INCREMENTAL_ALTER_CONFIGS_RESPONSE = ALTER_CONFIGS_RESPONSE

# AlterPartitionReassignmentsRequest: Kafka schema flexibleVersions 0+ (v1: KIP-860's guard
# against changing a partition's replication factor). Null replicas cancel a reassignment.
ALTER_PARTITION_REASSIGNMENTS_REQUEST = (
    F("timeout_ms", INT32, default=60000),
    F("allow_replication_factor_change", BOOL, 1, default=True),
    F("topics", [
        F("name", STRING),
        F("partitions", [
            F("partition_index", INT32),
            F("replicas", ARRAY(INT32), nullable=0),
        ]),
    ]),
)

# AlterPartitionReassignmentsResponse: Kafka schema flexibleVersions 0+
ALTER_PARTITION_REASSIGNMENTS_RESPONSE = (
    F("throttle_time_ms", INT32),
    F("allow_replication_factor_change", BOOL, 1, default=True),
    F("error_code", INT16),
    F("error_message", STRING, nullable=0),
    F("responses", [
        F("name", STRING),
        F("partitions", [
            F("partition_index", INT32),
            F("error_code", INT16),
            F("error_message", STRING, nullable=0),
        ]),
    ]),
)

# ListPartitionReassignmentsRequest: Kafka schema flexibleVersions 0+ (null topics: all)
LIST_PARTITION_REASSIGNMENTS_REQUEST = (
    F("timeout_ms", INT32, default=60000),
    F("topics", [
        F("name", STRING),
        F("partition_indexes", ARRAY(INT32)),
    ], nullable=0),
)

# ListPartitionReassignmentsResponse: Kafka schema flexibleVersions 0+
LIST_PARTITION_REASSIGNMENTS_RESPONSE = (
    F("throttle_time_ms", INT32),
    F("error_code", INT16),
    F("error_message", STRING, nullable=0),
    F("topics", [
        F("name", STRING),
        F("partitions", [
            F("partition_index", INT32),
            F("replicas", ARRAY(INT32)),
            F("adding_replicas", ARRAY(INT32)),
            F("removing_replicas", ARRAY(INT32)),
        ]),
    ]),
)

# CreatePartitionsRequest: Kafka schema flexibleVersions 2+
CREATE_PARTITIONS_REQUEST = (
    F("topics", [
        F("name", STRING),
        F("count", INT32),
        F("assignments", [
            F("broker_ids", ARRAY(INT32)),
        ], nullable=0),
    ]),
    F("timeout_ms", INT32),
    F("validate_only", BOOL),
)

# CreatePartitionsResponse: Kafka schema flexibleVersions 2+
CREATE_PARTITIONS_RESPONSE = (
    F("throttle_time_ms", INT32),
    F("results", [
        F("name", STRING),
        F("error_code", INT16),
        F("error_message", STRING, nullable=0),
    ]),
)

# SaslHandshakeRequest: Kafka schema flexibleVersions none
SASL_HANDSHAKE_REQUEST = (
    F("mechanism", STRING),
)

# SaslHandshakeResponse: Kafka schema flexibleVersions none
SASL_HANDSHAKE_RESPONSE = (
    F("error_code", INT16),
    F("mechanisms", ARRAY(STRING)),
)

# SaslAuthenticateRequest: Kafka schema flexibleVersions 2+
SASL_AUTHENTICATE_REQUEST = (
    F("auth_bytes", BYTES),
)

# SaslAuthenticateResponse: Kafka schema flexibleVersions 2+
SASL_AUTHENTICATE_RESPONSE = (
    F("error_code", INT16),
    F("error_message", STRING, nullable=0),
    F("auth_bytes", BYTES),
    F("session_lifetime_ms", INT64, 1),
)

# ElectLeadersRequest: Kafka schema flexibleVersions 2+
ELECT_LEADERS_REQUEST = (
    F("election_type", INT8, 1),
    F("topic_partitions", [
        F("topic", STRING),
        F("partitions", ARRAY(INT32)),
    ], nullable=0),
    F("timeout_ms", INT32, default=60000),
)

# ElectLeadersResponse: Kafka schema flexibleVersions 2+
ELECT_LEADERS_RESPONSE = (
    F("throttle_time_ms", INT32),
    F("error_code", INT16, 1),
    F("replica_election_results", [
        F("topic", STRING),
        F("partition_result", [
            F("partition_id", INT32),
            F("error_code", INT16),
            F("error_message", STRING, nullable=0),
        ]),
    ]),
)

# DescribeClusterRequest: Kafka schema flexibleVersions 0+
DESCRIBE_CLUSTER_REQUEST = (
    F("include_cluster_authorized_operations", BOOL),
    F("endpoint_type", INT8, 1, default=1),
)

# DescribeClusterResponse: Kafka schema flexibleVersions 0+
DESCRIBE_CLUSTER_RESPONSE = (
    F("throttle_time_ms", INT32),
    F("error_code", INT16),
    F("error_message", STRING, nullable=0),
    F("endpoint_type", INT8, 1, default=1),
    F("cluster_id", STRING),
    F("controller_id", INT32, default=-1),
    F("brokers", [
        F("broker_id", INT32),
        F("host", STRING),
        F("port", INT32),
        F("rack", STRING, nullable=0),
    ]),
    F("cluster_authorized_operations", INT32, default=-2147483648),
)

# DescribeQuorumRequest: Kafka schema flexibleVersions 0+
DESCRIBE_QUORUM_REQUEST = (
    F("topics", [
        F("topic_name", STRING),
        F("partitions", [
            F("partition_index", INT32),
        ]),
    ]),
)

# DescribeQuorumResponse's ReplicaState (v1: fetch times, KIP-836; v2: directory id, KIP-853)
_REPLICA_STATE = (
    F("replica_id", INT32),
    F("replica_directory_id", UUID, 2),
    F("log_end_offset", INT64),
    F("last_fetch_timestamp", INT64, 1, default=-1),
    F("last_caught_up_timestamp", INT64, 1, default=-1),
)

# DescribeQuorumResponse: Kafka schema flexibleVersions 0+
DESCRIBE_QUORUM_RESPONSE = (
    F("error_code", INT16),
    F("error_message", STRING, 2, nullable=2),
    F("topics", [
        F("topic_name", STRING),
        F("partitions", [
            F("partition_index", INT32),
            F("error_code", INT16),
            F("error_message", STRING, 2, nullable=2),
            F("leader_id", INT32),
            F("leader_epoch", INT32),
            F("high_watermark", INT64),
            F("current_voters", list(_REPLICA_STATE)),
            F("observers", list(_REPLICA_STATE)),
        ]),
    ]),
    F("nodes", [
        F("node_id", INT32, 2),
        F("listeners", [
            F("name", STRING, 2),
            F("host", STRING, 2),
            F("port", UINT16, 2),
        ], 2),
    ], 2),
)

# UpdateFeaturesRequest: Kafka schema flexibleVersions 0+ (v1: UpgradeType replaces
# AllowDowngrade; 1 = upgrade, 2 = safe downgrade, 3 = unsafe downgrade)
UPDATE_FEATURES_REQUEST = (
    F("timeout_ms", INT32, default=60000),
    F("feature_updates", [
        F("feature", STRING),
        F("max_version_level", INT16),
        F("allow_downgrade", BOOL, 0, 0),
        F("upgrade_type", INT8, 1, default=1),
    ]),
    F("validate_only", BOOL, 1),
)

# UpdateFeaturesResponse: Kafka schema flexibleVersions 0+
UPDATE_FEATURES_RESPONSE = (
    F("throttle_time_ms", INT32),
    F("error_code", INT16),
    F("error_message", STRING, nullable=0),
    F("results", [
        F("feature", STRING),
        F("error_code", INT16),
        F("error_message", STRING, nullable=0),
    ]),
)

# OffsetDeleteRequest: Kafka schema flexibleVersions none
OFFSET_DELETE_REQUEST = (
    F("group_id", STRING),
    F("topics", [
        F("name", STRING),
        F("partitions", [
            F("partition_index", INT32),
        ]),
    ]),
)

# OffsetDeleteResponse: Kafka schema flexibleVersions none
OFFSET_DELETE_RESPONSE = (
    F("error_code", INT16),
    F("throttle_time_ms", INT32),
    F("topics", [
        F("name", STRING),
        F("partitions", [
            F("partition_index", INT32),
            F("error_code", INT16),
        ]),
    ]),
)

# DescribeUserScramCredentialsRequest: Kafka schema flexibleVersions 0+ (null users: all)
DESCRIBE_USER_SCRAM_CREDENTIALS_REQUEST = (
    F("users", [
        F("name", STRING),
    ], nullable=0),
)

# DescribeUserScramCredentialsResponse: Kafka schema flexibleVersions 0+
DESCRIBE_USER_SCRAM_CREDENTIALS_RESPONSE = (
    F("throttle_time_ms", INT32),
    F("error_code", INT16),
    F("error_message", STRING, nullable=0),
    F("results", [
        F("user", STRING),
        F("error_code", INT16),
        F("error_message", STRING, nullable=0),
        F("credential_infos", [
            F("mechanism", INT8),
            F("iterations", INT32),
        ]),
    ]),
)

# AlterUserScramCredentialsRequest: Kafka schema flexibleVersions 0+ (the client derives the
# salted password; the password itself never travels)
ALTER_USER_SCRAM_CREDENTIALS_REQUEST = (
    F("deletions", [
        F("name", STRING),
        F("mechanism", INT8),
    ]),
    F("upsertions", [
        F("name", STRING),
        F("mechanism", INT8),
        F("iterations", INT32),
        F("salt", BYTES),
        F("salted_password", BYTES),
    ]),
)

# AlterUserScramCredentialsResponse: Kafka schema flexibleVersions 0+
ALTER_USER_SCRAM_CREDENTIALS_RESPONSE = (
    F("throttle_time_ms", INT32),
    F("results", [
        F("user", STRING),
        F("error_code", INT16),
        F("error_message", STRING, nullable=0),
    ]),
)

# DescribeTopicPartitions' Cursor (where a paginated answer continues)
_CURSOR = STRUCT(
    F("topic_name", STRING),
    F("partition_index", INT32),
)

# ConsumerGroupHeartbeatRequest (KIP-848): Kafka schema flexibleVersions 0+; v1 adds the regex.
def _consumer_topic_partitions() -> list[F]:
    # A fresh field list per use: the codec compiler keys its plans by field object.
    return [
        F("topic_id", UUID),
        F("partitions", ARRAY(INT32)),
    ]


CONSUMER_GROUP_HEARTBEAT_REQUEST = (
    F("group_id", STRING),
    F("member_id", STRING),
    F("member_epoch", INT32),
    F("instance_id", STRING, nullable=0),
    F("rack_id", STRING, nullable=0),
    F("rebalance_timeout_ms", INT32, default=-1),
    F("subscribed_topic_names", ARRAY(STRING), nullable=0),
    F("subscribed_topic_regex", STRING, 1, nullable=1),
    F("server_assignor", STRING, nullable=0),
    F("topic_partitions", _consumer_topic_partitions(), nullable=0),
)

# ConsumerGroupHeartbeatResponse: Kafka schema flexibleVersions 0+
CONSUMER_GROUP_HEARTBEAT_RESPONSE = (
    F("throttle_time_ms", INT32),
    F("error_code", INT16),
    F("error_message", STRING, nullable=0),
    F("member_id", STRING, nullable=0),
    F("member_epoch", INT32),
    F("heartbeat_interval_ms", INT32),
    F("assignment", STRUCT(
        F("topic_partitions", _consumer_topic_partitions()),
    ), nullable=0),
)

# ConsumerGroupDescribeRequest: Kafka schema flexibleVersions 0+
CONSUMER_GROUP_DESCRIBE_REQUEST = (
    F("group_ids", ARRAY(STRING)),
    F("include_authorized_operations", BOOL),
)

# ConsumerGroupDescribeResponse: Kafka schema flexibleVersions 0+
def _described_assignment() -> F:
    # A fresh struct per use (see _consumer_topic_partitions).
    return STRUCT(
        F("topic_partitions", [
            F("topic_id", UUID),
            F("topic_name", STRING),
            F("partitions", ARRAY(INT32)),
        ]),
    )


CONSUMER_GROUP_DESCRIBE_RESPONSE = (
    F("throttle_time_ms", INT32),
    F("groups", [
        F("error_code", INT16),
        F("error_message", STRING, nullable=0),
        F("group_id", STRING),
        F("group_state", STRING),
        F("group_epoch", INT32),
        F("assignment_epoch", INT32),
        F("assignor_name", STRING),
        F("members", [
            F("member_id", STRING),
            F("instance_id", STRING, nullable=0),
            F("rack_id", STRING, nullable=0),
            F("member_epoch", INT32),
            F("client_id", STRING),
            F("client_host", STRING),
            F("subscribed_topic_names", ARRAY(STRING)),
            F("subscribed_topic_regex", STRING, nullable=0),
            F("assignment", _described_assignment()),
            F("target_assignment", _described_assignment()),
        ]),
        F("authorized_operations", INT32, default=-2147483648),
    ]),
)

# DescribeTopicPartitionsRequest: Kafka schema flexibleVersions 0+
DESCRIBE_TOPIC_PARTITIONS_REQUEST = (
    F("topics", [
        F("name", STRING),
    ]),
    F("response_partition_limit", INT32, default=2000),
    F("cursor", _CURSOR, nullable=0),
)

# DescribeTopicPartitionsResponse: Kafka schema flexibleVersions 0+
DESCRIBE_TOPIC_PARTITIONS_RESPONSE = (
    F("throttle_time_ms", INT32),
    F("topics", [
        F("error_code", INT16),
        F("name", STRING, nullable=0),
        F("topic_id", UUID),
        F("is_internal", BOOL),
        F("partitions", [
            F("error_code", INT16),
            F("partition_index", INT32),
            F("leader_id", INT32),
            F("leader_epoch", INT32, default=-1),
            F("replica_nodes", ARRAY(INT32)),
            F("isr_nodes", ARRAY(INT32)),
            F("eligible_leader_replicas", ARRAY(INT32), nullable=0),
            F("last_known_elr", ARRAY(INT32), nullable=0),
            F("offline_replicas", ARRAY(INT32)),
        ]),
        F("topic_authorized_operations", INT32, default=-2147483648),
    ]),
    F("next_cursor", _CURSOR, nullable=0),
)

# DescribeLogDirsRequest: Kafka schema flexibleVersions 2+ (null topics: every partition)
DESCRIBE_LOG_DIRS_REQUEST = (
    F("topics", [
        F("topic", STRING),
        F("partitions", ARRAY(INT32)),
    ], nullable=0),
)

# DescribeLogDirsResponse: Kafka schema flexibleVersions 2+
DESCRIBE_LOG_DIRS_RESPONSE = (
    F("throttle_time_ms", INT32),
    F("error_code", INT16, 3),
    F("results", [
        F("error_code", INT16),
        F("log_dir", STRING),
        F("topics", [
            F("name", STRING),
            F("partitions", [
                F("partition_index", INT32),
                F("partition_size", INT64),
                F("offset_lag", INT64),
                F("is_future_key", BOOL),
            ]),
        ]),
        F("total_bytes", INT64, 4, default=-1),
        F("usable_bytes", INT64, 4, default=-1),
    ]),
)

# DescribeProducersRequest: Kafka schema flexibleVersions 0+
DESCRIBE_PRODUCERS_REQUEST = (
    F("topics", [
        F("name", STRING),
        F("partition_indexes", ARRAY(INT32)),
    ]),
)

# DescribeProducersResponse: Kafka schema flexibleVersions 0+
DESCRIBE_PRODUCERS_RESPONSE = (
    F("throttle_time_ms", INT32),
    F("topics", [
        F("name", STRING),
        F("partitions", [
            F("partition_index", INT32),
            F("error_code", INT16),
            F("error_message", STRING, nullable=0),
            F("active_producers", [
                F("producer_id", INT64),
                F("producer_epoch", INT32),
                F("last_sequence", INT32, default=-1),
                F("last_timestamp", INT64, default=-1),
                F("coordinator_epoch", INT32),
                F("current_txn_start_offset", INT64, default=-1),
            ]),
        ]),
    ]),
)

# DescribeTransactionsRequest: Kafka schema flexibleVersions 0+
DESCRIBE_TRANSACTIONS_REQUEST = (
    F("transactional_ids", ARRAY(STRING)),
)

# DescribeTransactionsResponse: Kafka schema flexibleVersions 0+
DESCRIBE_TRANSACTIONS_RESPONSE = (
    F("throttle_time_ms", INT32),
    F("transaction_states", [
        F("error_code", INT16),
        F("transactional_id", STRING),
        F("transaction_state", STRING),
        F("transaction_timeout_ms", INT32),
        F("transaction_start_time_ms", INT64),
        F("producer_id", INT64),
        F("producer_epoch", INT16),
        F("topics", [
            F("topic", STRING),
            F("partitions", ARRAY(INT32)),
        ]),
    ]),
)

# ListTransactionsRequest: Kafka schema flexibleVersions 0+
LIST_TRANSACTIONS_REQUEST = (
    F("state_filters", ARRAY(STRING)),
    F("producer_id_filters", ARRAY(INT64)),
    F("duration_filter", INT64, 1, default=-1),
    F("transactional_id_pattern", STRING, 2, nullable=2),
)

# ListTransactionsResponse: Kafka schema flexibleVersions 0+
LIST_TRANSACTIONS_RESPONSE = (
    F("throttle_time_ms", INT32),
    F("error_code", INT16),
    F("unknown_state_filters", ARRAY(STRING)),
    F("transaction_states", [
        F("transactional_id", STRING),
        F("producer_id", INT64),
        F("transaction_state", STRING),
    ]),
)
# DescribeAclsRequest: Kafka schema flexibleVersions 2+ (v3 knows the user resource type).
DESCRIBE_ACLS_REQUEST = (
    F("resource_type_filter", INT8),
    F("resource_name_filter", STRING, nullable=0),
    F("pattern_type_filter", INT8, 1, default=3),
    F("principal_filter", STRING, nullable=0),
    F("host_filter", STRING, nullable=0),
    F("operation", INT8),
    F("permission_type", INT8),
)

# DescribeAclsResponse: Kafka schema flexibleVersions 2+
DESCRIBE_ACLS_RESPONSE = (
    F("throttle_time_ms", INT32),
    F("error_code", INT16),
    F("error_message", STRING, nullable=0),
    F("resources", [
        F("resource_type", INT8),
        F("resource_name", STRING),
        F("pattern_type", INT8, 1, default=3),
        F("acls", [
            F("principal", STRING),
            F("host", STRING),
            F("operation", INT8),
            F("permission_type", INT8),
        ]),
    ]),
)

# CreateAclsRequest: Kafka schema flexibleVersions 2+
CREATE_ACLS_REQUEST = (
    F("creations", [
        F("resource_type", INT8),
        F("resource_name", STRING),
        F("resource_pattern_type", INT8, 1, default=3),
        F("principal", STRING),
        F("host", STRING),
        F("operation", INT8),
        F("permission_type", INT8),
    ]),
)

# CreateAclsResponse: Kafka schema flexibleVersions 2+
CREATE_ACLS_RESPONSE = (
    F("throttle_time_ms", INT32),
    F("results", [
        F("error_code", INT16),
        F("error_message", STRING, nullable=0),
    ]),
)

# DeleteAclsRequest: Kafka schema flexibleVersions 2+
DELETE_ACLS_REQUEST = (
    F("filters", [
        F("resource_type_filter", INT8),
        F("resource_name_filter", STRING, nullable=0),
        F("pattern_type_filter", INT8, 1, default=3),
        F("principal_filter", STRING, nullable=0),
        F("host_filter", STRING, nullable=0),
        F("operation", INT8),
        F("permission_type", INT8),
    ]),
)

# DeleteAclsResponse: Kafka schema flexibleVersions 2+
DELETE_ACLS_RESPONSE = (
    F("throttle_time_ms", INT32),
    F("filter_results", [
        F("error_code", INT16),
        F("error_message", STRING, nullable=0),
        F("matching_acls", [
            F("error_code", INT16),
            F("error_message", STRING, nullable=0),
            F("resource_type", INT8),
            F("resource_name", STRING),
            F("pattern_type", INT8, 1, default=3),
            F("principal", STRING),
            F("host", STRING),
            F("operation", INT8),
            F("permission_type", INT8),
        ]),
    ]),
)
# DescribeClientQuotasRequest: Kafka schema flexibleVersions 1+ (match_type 0 exact name,
# 1 default, 2 any specified name; match is null unless exact)
DESCRIBE_CLIENT_QUOTAS_REQUEST = (
    F("components", [
        F("entity_type", STRING),
        F("match_type", INT8),
        F("match", STRING, nullable=0),
    ]),
    F("strict", BOOL),
)

# DescribeClientQuotasResponse: Kafka schema flexibleVersions 1+ (a null entity name is the
# default entity)
DESCRIBE_CLIENT_QUOTAS_RESPONSE = (
    F("throttle_time_ms", INT32),
    F("error_code", INT16),
    F("error_message", STRING, nullable=0),
    F("entries", [
        F("entity", [
            F("entity_type", STRING),
            F("entity_name", STRING, nullable=0),
        ]),
        F("values", [
            F("key", STRING),
            F("value", FLOAT64),
        ]),
    ], nullable=0),
)

# AlterClientQuotasRequest: Kafka schema flexibleVersions 1+
ALTER_CLIENT_QUOTAS_REQUEST = (
    F("entries", [
        F("entity", [
            F("entity_type", STRING),
            F("entity_name", STRING, nullable=0),
        ]),
        F("ops", [
            F("key", STRING),
            F("value", FLOAT64),
            F("remove", BOOL),
        ]),
    ]),
    F("validate_only", BOOL),
)

# AlterClientQuotasResponse: Kafka schema flexibleVersions 1+
ALTER_CLIENT_QUOTAS_RESPONSE = (
    F("throttle_time_ms", INT32),
    F("entries", [
        F("error_code", INT16),
        F("error_message", STRING, nullable=0),
        F("entity", [
            F("entity_type", STRING),
            F("entity_name", STRING, nullable=0),
        ]),
    ]),
)
# fmt: on

# ApiKey -> first flexible version (None: no version is flexible), from each schema's
# flexibleVersions (the same for its request and response).
FLEXIBLE_SINCE: dict[ApiKey, int | None] = {
    ApiKey.PRODUCE: 9,
    ApiKey.FETCH: 12,
    ApiKey.LIST_OFFSETS: 6,
    ApiKey.METADATA: 9,
    ApiKey.OFFSET_COMMIT: 8,
    ApiKey.OFFSET_FETCH: 6,
    ApiKey.FIND_COORDINATOR: 3,
    ApiKey.JOIN_GROUP: 6,
    ApiKey.HEARTBEAT: 4,
    ApiKey.LEAVE_GROUP: 4,
    ApiKey.SYNC_GROUP: 4,
    ApiKey.DESCRIBE_GROUPS: 5,
    ApiKey.LIST_GROUPS: 3,
    ApiKey.DELETE_GROUPS: 2,
    ApiKey.API_VERSIONS: 3,
    ApiKey.CREATE_TOPICS: 5,
    ApiKey.DELETE_TOPICS: 4,
    ApiKey.DELETE_RECORDS: 2,
    ApiKey.INIT_PRODUCER_ID: 2,
    ApiKey.ADD_PARTITIONS_TO_TXN: 3,
    ApiKey.ADD_OFFSETS_TO_TXN: 3,
    ApiKey.END_TXN: 3,
    ApiKey.WRITE_TXN_MARKERS: 1,
    ApiKey.TXN_OFFSET_COMMIT: 3,
    ApiKey.OFFSET_FOR_LEADER_EPOCH: 4,
    ApiKey.DESCRIBE_CONFIGS: 4,
    ApiKey.ALTER_CONFIGS: 2,
    ApiKey.CREATE_PARTITIONS: 2,
    ApiKey.INCREMENTAL_ALTER_CONFIGS: 1,
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: 0,
    ApiKey.LIST_PARTITION_REASSIGNMENTS: 0,
    ApiKey.SASL_HANDSHAKE: None,
    ApiKey.SASL_AUTHENTICATE: 2,
    ApiKey.ELECT_LEADERS: 2,
    ApiKey.DESCRIBE_LOG_DIRS: 2,
    ApiKey.DESCRIBE_CLUSTER: 0,
    ApiKey.DESCRIBE_QUORUM: 0,
    ApiKey.UPDATE_FEATURES: 0,
    ApiKey.OFFSET_DELETE: None,
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: 0,
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: 0,
    ApiKey.DESCRIBE_TOPIC_PARTITIONS: 0,
    ApiKey.DESCRIBE_PRODUCERS: 0,
    ApiKey.DESCRIBE_TRANSACTIONS: 0,
    ApiKey.LIST_TRANSACTIONS: 0,
    ApiKey.CONSUMER_GROUP_HEARTBEAT: 0,
    ApiKey.CONSUMER_GROUP_DESCRIBE: 0,
    ApiKey.DESCRIBE_ACLS: 2,
    ApiKey.CREATE_ACLS: 2,
    ApiKey.DELETE_ACLS: 2,
    ApiKey.DESCRIBE_CLIENT_QUOTAS: 1,
    ApiKey.ALTER_CLIENT_QUOTAS: 1,
}


def is_flexible(api_key: int, version: int) -> bool:
    """Whether ``version`` of ``api_key`` uses the flexible encodings (False for unknown keys)."""
    since = FLEXIBLE_SINCE.get(api_key)  # type: ignore[call-overload]
    return since is not None and version >= since


# ApiKey -> (request fields, response fields).
MESSAGES: dict[ApiKey, tuple[tuple[F, ...], tuple[F, ...]]] = {
    ApiKey.PRODUCE: (PRODUCE_REQUEST, PRODUCE_RESPONSE),
    ApiKey.FETCH: (FETCH_REQUEST, FETCH_RESPONSE),
    ApiKey.LIST_OFFSETS: (LIST_OFFSETS_REQUEST, LIST_OFFSETS_RESPONSE),
    ApiKey.METADATA: (METADATA_REQUEST, METADATA_RESPONSE),
    ApiKey.OFFSET_COMMIT: (OFFSET_COMMIT_REQUEST, OFFSET_COMMIT_RESPONSE),
    ApiKey.OFFSET_FETCH: (OFFSET_FETCH_REQUEST, OFFSET_FETCH_RESPONSE),
    ApiKey.FIND_COORDINATOR: (FIND_COORDINATOR_REQUEST, FIND_COORDINATOR_RESPONSE),
    ApiKey.JOIN_GROUP: (JOIN_GROUP_REQUEST, JOIN_GROUP_RESPONSE),
    ApiKey.HEARTBEAT: (HEARTBEAT_REQUEST, HEARTBEAT_RESPONSE),
    ApiKey.LEAVE_GROUP: (LEAVE_GROUP_REQUEST, LEAVE_GROUP_RESPONSE),
    ApiKey.SYNC_GROUP: (SYNC_GROUP_REQUEST, SYNC_GROUP_RESPONSE),
    ApiKey.DESCRIBE_GROUPS: (DESCRIBE_GROUPS_REQUEST, DESCRIBE_GROUPS_RESPONSE),
    ApiKey.LIST_GROUPS: (LIST_GROUPS_REQUEST, LIST_GROUPS_RESPONSE),
    ApiKey.DELETE_GROUPS: (DELETE_GROUPS_REQUEST, DELETE_GROUPS_RESPONSE),
    ApiKey.API_VERSIONS: (API_VERSIONS_REQUEST, API_VERSIONS_RESPONSE),
    ApiKey.CREATE_TOPICS: (CREATE_TOPICS_REQUEST, CREATE_TOPICS_RESPONSE),
    ApiKey.DELETE_TOPICS: (DELETE_TOPICS_REQUEST, DELETE_TOPICS_RESPONSE),
    ApiKey.DELETE_RECORDS: (DELETE_RECORDS_REQUEST, DELETE_RECORDS_RESPONSE),
    ApiKey.INIT_PRODUCER_ID: (INIT_PRODUCER_ID_REQUEST, INIT_PRODUCER_ID_RESPONSE),
    ApiKey.ADD_PARTITIONS_TO_TXN: (ADD_PARTITIONS_TO_TXN_REQUEST, ADD_PARTITIONS_TO_TXN_RESPONSE),
    ApiKey.ADD_OFFSETS_TO_TXN: (ADD_OFFSETS_TO_TXN_REQUEST, ADD_OFFSETS_TO_TXN_RESPONSE),
    ApiKey.END_TXN: (END_TXN_REQUEST, END_TXN_RESPONSE),
    ApiKey.WRITE_TXN_MARKERS: (WRITE_TXN_MARKERS_REQUEST, WRITE_TXN_MARKERS_RESPONSE),
    ApiKey.TXN_OFFSET_COMMIT: (TXN_OFFSET_COMMIT_REQUEST, TXN_OFFSET_COMMIT_RESPONSE),
    ApiKey.OFFSET_FOR_LEADER_EPOCH: (
        OFFSET_FOR_LEADER_EPOCH_REQUEST,
        OFFSET_FOR_LEADER_EPOCH_RESPONSE,
    ),
    ApiKey.DESCRIBE_CONFIGS: (DESCRIBE_CONFIGS_REQUEST, DESCRIBE_CONFIGS_RESPONSE),
    ApiKey.ALTER_CONFIGS: (ALTER_CONFIGS_REQUEST, ALTER_CONFIGS_RESPONSE),
    ApiKey.CREATE_PARTITIONS: (CREATE_PARTITIONS_REQUEST, CREATE_PARTITIONS_RESPONSE),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: (
        INCREMENTAL_ALTER_CONFIGS_REQUEST,
        INCREMENTAL_ALTER_CONFIGS_RESPONSE,
    ),
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: (
        ALTER_PARTITION_REASSIGNMENTS_REQUEST,
        ALTER_PARTITION_REASSIGNMENTS_RESPONSE,
    ),
    ApiKey.LIST_PARTITION_REASSIGNMENTS: (
        LIST_PARTITION_REASSIGNMENTS_REQUEST,
        LIST_PARTITION_REASSIGNMENTS_RESPONSE,
    ),
    ApiKey.SASL_HANDSHAKE: (SASL_HANDSHAKE_REQUEST, SASL_HANDSHAKE_RESPONSE),
    ApiKey.SASL_AUTHENTICATE: (SASL_AUTHENTICATE_REQUEST, SASL_AUTHENTICATE_RESPONSE),
    ApiKey.ELECT_LEADERS: (ELECT_LEADERS_REQUEST, ELECT_LEADERS_RESPONSE),
    ApiKey.DESCRIBE_LOG_DIRS: (DESCRIBE_LOG_DIRS_REQUEST, DESCRIBE_LOG_DIRS_RESPONSE),
    ApiKey.DESCRIBE_CLUSTER: (DESCRIBE_CLUSTER_REQUEST, DESCRIBE_CLUSTER_RESPONSE),
    ApiKey.DESCRIBE_QUORUM: (DESCRIBE_QUORUM_REQUEST, DESCRIBE_QUORUM_RESPONSE),
    ApiKey.OFFSET_DELETE: (OFFSET_DELETE_REQUEST, OFFSET_DELETE_RESPONSE),
    ApiKey.DESCRIBE_TOPIC_PARTITIONS: (
        DESCRIBE_TOPIC_PARTITIONS_REQUEST,
        DESCRIBE_TOPIC_PARTITIONS_RESPONSE,
    ),
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: (
        DESCRIBE_USER_SCRAM_CREDENTIALS_REQUEST,
        DESCRIBE_USER_SCRAM_CREDENTIALS_RESPONSE,
    ),
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: (
        ALTER_USER_SCRAM_CREDENTIALS_REQUEST,
        ALTER_USER_SCRAM_CREDENTIALS_RESPONSE,
    ),
    ApiKey.UPDATE_FEATURES: (UPDATE_FEATURES_REQUEST, UPDATE_FEATURES_RESPONSE),
    ApiKey.DESCRIBE_PRODUCERS: (DESCRIBE_PRODUCERS_REQUEST, DESCRIBE_PRODUCERS_RESPONSE),
    ApiKey.DESCRIBE_TRANSACTIONS: (
        DESCRIBE_TRANSACTIONS_REQUEST,
        DESCRIBE_TRANSACTIONS_RESPONSE,
    ),
    ApiKey.LIST_TRANSACTIONS: (LIST_TRANSACTIONS_REQUEST, LIST_TRANSACTIONS_RESPONSE),
    ApiKey.CONSUMER_GROUP_HEARTBEAT: (
        CONSUMER_GROUP_HEARTBEAT_REQUEST,
        CONSUMER_GROUP_HEARTBEAT_RESPONSE,
    ),
    ApiKey.CONSUMER_GROUP_DESCRIBE: (
        CONSUMER_GROUP_DESCRIBE_REQUEST,
        CONSUMER_GROUP_DESCRIBE_RESPONSE,
    ),
    ApiKey.DESCRIBE_ACLS: (DESCRIBE_ACLS_REQUEST, DESCRIBE_ACLS_RESPONSE),
    ApiKey.CREATE_ACLS: (CREATE_ACLS_REQUEST, CREATE_ACLS_RESPONSE),
    ApiKey.DELETE_ACLS: (DELETE_ACLS_REQUEST, DELETE_ACLS_RESPONSE),
    ApiKey.DESCRIBE_CLIENT_QUOTAS: (
        DESCRIBE_CLIENT_QUOTAS_REQUEST,
        DESCRIBE_CLIENT_QUOTAS_RESPONSE,
    ),
    ApiKey.ALTER_CLIENT_QUOTAS: (ALTER_CLIENT_QUOTAS_REQUEST, ALTER_CLIENT_QUOTAS_RESPONSE),
}
