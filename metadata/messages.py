"""Requests and responses of the controller's gRPC service (msgpack maps via metadata.wire).

Names follow Kafka's RPCs (BrokerRegistration, BrokerHeartbeat, CreateTopics, AlterPartition,
AllocateProducerIds, ...). Every response body carries its own per-item Kafka error codes;
routing errors (NOT_CONTROLLER and the like) travel in the envelope (see metadata.rpc).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from common.config_resources import OP_SET

# ElectLeaders election types (Kafka's ElectionType).
ELECTION_PREFERRED = 0
ELECTION_UNCLEAN = 1


@dataclass(frozen=True, slots=True)
class Endpoint:
    name: str
    host: str
    port: int


# --- broker lifecycle --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RegisterBrokerRequest:
    broker_id: int
    incarnation_id: str
    listeners: list[Endpoint]
    rack: str | None = None
    cluster_id: str | None = None
    # The broker found every log directory closed cleanly (its logs hold all they acknowledged).
    clean_shutdown: bool = False
    # The metadata.version levels the broker supports (0, 0: not reported; metadata.features).
    min_metadata_version: int = 0
    max_metadata_version: int = 0


@dataclass(frozen=True, slots=True)
class RegisterBrokerResponse:
    error_code: int = 0
    error_message: str | None = None
    broker_epoch: int = -1
    heartbeat_interval_ms: int = 2000
    session_timeout_ms: int = 9000


@dataclass(frozen=True, slots=True)
class ReplicaLogEnd:
    """Where a broker's log of a leaderless partition ends, for unclean recovery: the leader
    epoch of its last batch and its log end offset (metadata.election)."""

    topic_id: uuid.UUID
    partition: int
    last_epoch: int
    log_end_offset: int


@dataclass(frozen=True, slots=True)
class OfflineReplica:
    """A replica of the reporting broker whose log directory went offline."""

    topic_id: uuid.UUID
    partition: int


@dataclass(frozen=True, slots=True)
class BrokerHeartbeatRequest:
    broker_id: int
    broker_epoch: int
    current_metadata_offset: int
    want_fence: bool = False
    want_shutdown: bool = False
    # Every local replica of a partition that, in the broker's metadata, has no leader and
    # lists the broker in its ISR or ELR (empty otherwise); each heartbeat replaces the last.
    replica_log_ends: list[ReplicaLogEnd] = field(default_factory=list)
    # As in RegisterBrokerRequest (a newly active controller learns them from heartbeats).
    min_metadata_version: int = 0
    max_metadata_version: int = 0
    # Log directories that failed, and every replica whose log was in one; each heartbeat
    # replaces the last (the controller moves them out of their ISRs and leadership).
    offline_log_dirs: list[str] = field(default_factory=list)
    offline_replicas: list[OfflineReplica] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class BrokerHeartbeatResponse:
    error_code: int = 0
    error_message: str | None = None
    is_caught_up: bool = False
    is_fenced: bool = True
    should_shut_down: bool = False


@dataclass(frozen=True, slots=True)
class BrokerSessionRequest:
    """Opens a broker's session stream to the active controller (see
    metadata.broker_session_streams): held open while the broker process lives, so that its
    end tells the controller at once that the process is gone."""

    broker_id: int
    broker_epoch: int


@dataclass(frozen=True, slots=True)
class BrokerSessionResponse:
    """The stream's one message: NO_ERROR when the controller holds the session, else why not
    (STALE_BROKER_EPOCH, BROKER_ID_NOT_REGISTERED, THROTTLING_QUOTA_EXCEEDED when it holds as
    many streams as it may)."""

    error_code: int = 0
    error_message: str | None = None


# --- topics ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class NewTopic:
    """A topic to create. -1 means the controller's ``num.partitions`` /
    ``default.replication.factor``; ``replica_assignment`` (partition -> broker ids) replaces
    both and must then leave them at -1."""

    name: str
    num_partitions: int = -1
    replication_factor: int = -1
    replica_assignment: dict[int, list[int]] | None = None
    configs: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class TopicResult:
    name: str
    error_code: int = 0
    error_message: str | None = None
    topic_id: uuid.UUID | None = None
    num_partitions: int = -1
    replication_factor: int = -1


@dataclass(frozen=True, slots=True)
class CreateTopicsRequest:
    topics: list[NewTopic]
    validate_only: bool = False


@dataclass(frozen=True, slots=True)
class CreateTopicsResponse:
    topics: list[TopicResult]


@dataclass(frozen=True, slots=True)
class DeleteTopicsRequest:
    """Delete ``names``; a name in ``topic_ids`` (a deletion by topic id) is deleted only if
    it still has that id, else UNKNOWN_TOPIC_ID (the topic was re-created meanwhile)."""

    names: list[str]
    topic_ids: dict[str, uuid.UUID] | None = None


@dataclass(frozen=True, slots=True)
class DeleteTopicsResponse:
    topics: list[TopicResult]


@dataclass(frozen=True, slots=True)
class NewPartitions:
    """Grow topic ``name`` to ``count`` partitions; ``assignments`` optionally gives the replicas
    of each new partition (one list per new partition)."""

    name: str
    count: int
    assignments: list[list[int]] | None = None


@dataclass(frozen=True, slots=True)
class CreatePartitionsRequest:
    topics: list[NewPartitions]
    validate_only: bool = False


@dataclass(frozen=True, slots=True)
class CreatePartitionsResponse:
    topics: list[TopicResult]


# --- partitions --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AlterPartitionItem:
    partition_index: int
    leader_epoch: int
    new_isr: list[int]
    partition_epoch: int


@dataclass(frozen=True, slots=True)
class AlterPartitionTopic:
    name: str
    partitions: list[AlterPartitionItem]
    topic_id: uuid.UUID | None = None


@dataclass(frozen=True, slots=True)
class AlterPartitionRequest:
    broker_id: int
    broker_epoch: int
    topics: list[AlterPartitionTopic]


@dataclass(frozen=True, slots=True)
class AlterPartitionResult:
    """The partition's state after the request (current state on error, when known)."""

    name: str
    partition_index: int
    error_code: int = 0
    error_message: str | None = None
    leader_id: int = -1
    leader_epoch: int = -1
    isr: list[int] = field(default_factory=list)
    partition_epoch: int = -1


@dataclass(frozen=True, slots=True)
class AlterPartitionResponse:
    error_code: int = 0
    error_message: str | None = None
    partitions: list[AlterPartitionResult] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class ElectLeadersRequest:
    election_type: int = ELECTION_PREFERRED
    partitions: dict[str, list[int]] | None = None  # None: every partition


@dataclass(frozen=True, slots=True)
class ElectionResult:
    name: str
    partition_index: int
    error_code: int = 0
    error_message: str | None = None


@dataclass(frozen=True, slots=True)
class ElectLeadersResponse:
    results: list[ElectionResult]


# --- partition reassignment (Kafka's AlterPartitionReassignments / ListPartitionReassignments) --


@dataclass(frozen=True, slots=True)
class ReassignablePartition:
    partition_index: int
    replicas: list[int] | None = None  # the target replicas; None cancels the reassignment


@dataclass(frozen=True, slots=True)
class ReassignableTopic:
    name: str
    partitions: list[ReassignablePartition]


@dataclass(frozen=True, slots=True)
class AlterPartitionReassignmentsRequest:
    topics: list[ReassignableTopic]
    # False: a target whose size differs from the partition's replication factor (its replicas
    # before any reassignment in progress) is refused with INVALID_REPLICATION_FACTOR (KIP-860).
    allow_replication_factor_change: bool = True


@dataclass(frozen=True, slots=True)
class ReassignablePartitionResult:
    name: str
    partition_index: int
    error_code: int = 0
    error_message: str | None = None


@dataclass(frozen=True, slots=True)
class AlterPartitionReassignmentsResponse:
    results: list[ReassignablePartitionResult]


@dataclass(frozen=True, slots=True)
class ListPartitionReassignmentsRequest:
    partitions: dict[str, list[int]] | None = None  # None: every partition


@dataclass(frozen=True, slots=True)
class OngoingPartitionReassignment:
    name: str
    partition_index: int
    replicas: list[int]
    adding_replicas: list[int]
    removing_replicas: list[int]


@dataclass(frozen=True, slots=True)
class ListPartitionReassignmentsResponse:
    reassignments: list[OngoingPartitionReassignment]


# --- producer ids ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AllocateProducerIdsRequest:
    broker_id: int
    broker_epoch: int


@dataclass(frozen=True, slots=True)
class AllocateProducerIdsResponse:
    error_code: int = 0
    error_message: str | None = None
    producer_id_start: int = -1
    producer_id_len: int = 0


# --- configs -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AlterConfigsResource:
    """Legacy AlterConfigs: ``configs`` REPLACES every override of the resource."""

    resource_type: int
    resource_name: str
    configs: dict[str, str]


@dataclass(frozen=True, slots=True)
class AlterConfigsRequest:
    resources: list[AlterConfigsResource]
    validate_only: bool = False


@dataclass(frozen=True, slots=True)
class AlterableConfig:
    name: str
    op: int = OP_SET
    value: str | None = None


@dataclass(frozen=True, slots=True)
class IncrementalAlterConfigsResource:
    resource_type: int
    resource_name: str
    configs: list[AlterableConfig]


@dataclass(frozen=True, slots=True)
class IncrementalAlterConfigsRequest:
    resources: list[IncrementalAlterConfigsResource]
    validate_only: bool = False


@dataclass(frozen=True, slots=True)
class ConfigResourceResult:
    resource_type: int
    resource_name: str
    error_code: int = 0
    error_message: str | None = None


@dataclass(frozen=True, slots=True)
class AlterConfigsResponse:
    resources: list[ConfigResourceResult]


@dataclass(frozen=True, slots=True)
class DescribeConfigsResource:
    resource_type: int
    resource_name: str


@dataclass(frozen=True, slots=True)
class DescribeConfigsRequest:
    resources: list[DescribeConfigsResource]


@dataclass(frozen=True, slots=True)
class ConfigEntry:
    name: str
    value: str | None
    is_default: bool
    read_only: bool = False
    sensitive: bool = False


@dataclass(frozen=True, slots=True)
class DescribeConfigsResult:
    resource_type: int
    resource_name: str
    error_code: int = 0
    error_message: str | None = None
    configs: list[ConfigEntry] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class DescribeConfigsResponse:
    resources: list[DescribeConfigsResult]


# --- cluster / quorum / metadata fetch ---------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DescribeClusterRequest:
    pass


@dataclass(frozen=True, slots=True)
class BrokerDescription:
    broker_id: int
    epoch: int
    listeners: list[Endpoint]
    rack: str | None
    fenced: bool
    in_controlled_shutdown: bool


@dataclass(frozen=True, slots=True)
class ClusterDescription:
    cluster_id: str | None
    controller_id: int | None
    brokers: list[BrokerDescription]
    metadata_offset: int = -1


# --- feature levels (metadata.features) --------------------------------------------------------


@dataclass(frozen=True, slots=True)
class UpdateFeaturesRequest:
    """Raise a finalized feature level (Kafka's UpdateFeatures, upgrade only)."""

    feature: str
    level: int
    validate_only: bool = False


@dataclass(frozen=True, slots=True)
class UpdateFeaturesResponse:
    error_code: int = 0
    error_message: str | None = None
    finalized_level: int = -1


@dataclass(frozen=True, slots=True)
class DescribeFeaturesRequest:
    pass


@dataclass(frozen=True, slots=True)
class NodeFeatures:
    """The metadata.version range a node reported (0, 0: not reported since this controller
    became active)."""

    node_id: int
    role: str  # "controller" or "broker"
    min_metadata_version: int
    max_metadata_version: int


@dataclass(frozen=True, slots=True)
class DescribeFeaturesResponse:
    finalized: dict[str, int]
    # The offset of the metadata image the answer was computed from (Kafka's features epoch).
    metadata_offset: int
    nodes: list[NodeFeatures]
    # Every metadata.version level: [level, name, what it adds].
    levels: list[list[Any]] = field(default_factory=list)


# --- the quorum, for DescribeQuorum ------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DescribeQuorumRequest:
    pass


@dataclass(frozen=True, slots=True)
class QuorumReplica:
    """A voter (Raft log end it acknowledged) or an observer (a broker: the metadata offset
    it reported); times are wall-clock ms, -1 when unknown."""

    replica_id: int
    log_end_offset: int
    last_fetch_ms: int = -1
    last_caught_up_ms: int = -1


@dataclass(frozen=True, slots=True)
class ControllerEndpoint:
    node_id: int
    host: str
    port: int


@dataclass(frozen=True, slots=True)
class QuorumDescription:
    """The active controller's view of the metadata quorum (Kafka's DescribeQuorum)."""

    leader_id: int
    leader_epoch: int
    high_watermark: int
    voters: list[QuorumReplica]
    observers: list[QuorumReplica]
    nodes: list[ControllerEndpoint]


@dataclass(frozen=True, slots=True)
class AddRaftVoterRequest:
    """Make controller ``voter_id`` (Raft listener ``raft_address``), which follows the log as
    an observer, a voter (Kafka's AddRaftVoter)."""

    voter_id: int
    raft_address: str
    timeout_ms: int = 30_000


@dataclass(frozen=True, slots=True)
class RemoveRaftVoterRequest:
    """Take voter ``voter_id`` out of the controller quorum (Kafka's RemoveRaftVoter)."""

    voter_id: int
    timeout_ms: int = 30_000


@dataclass(frozen=True, slots=True)
class RaftVoterResponse:
    """The voter set after the change (voter id -> Raft address), or the error that stopped
    it: DUPLICATE_VOTER, VOTER_NOT_FOUND, REQUEST_TIMED_OUT (not caught up, or another
    change still committing; retry), INVALID_REQUEST (it would remove the last voter)."""

    error_code: int = 0
    error_message: str | None = None
    voters: dict[int, str] | None = None


@dataclass(frozen=True, slots=True)
class QuorumStatusRequest:
    pass


@dataclass(frozen=True, slots=True)
class QuorumStatusResponse:
    status: dict[str, Any]


@dataclass(frozen=True, slots=True)
class FetchMetadataRequest:
    from_offset: int
    max_wait_ms: int = 0
    max_records: int = 50_000


@dataclass(frozen=True, slots=True)
class FetchMetadataResponse:
    """``snapshot`` (an encoded MetadataImage as of ``snapshot_offset``, Raft epoch
    ``snapshot_epoch``) when ``from_offset`` is older than the log's in-memory tail; then the
    committed ``entries`` after it as (offset, epoch, record bytes, is_control) — raft control
    entries included so the reader's position advances over them; ``committed_offset`` is the
    log's commit point on the answering voter."""

    snapshot: bytes | None = None
    snapshot_offset: int = -1
    snapshot_epoch: int = -1
    entries: list[tuple[int, int, bytes, bool]] = field(default_factory=list)
    committed_offset: int = -1
