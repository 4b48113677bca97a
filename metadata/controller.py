"""QuorumController: the sans-IO decision core of the active controller.

It holds the committed :class:`MetadataImage` (the service replays committed log entries into it
with :meth:`replay`) and, while active, the in-memory broker heartbeat state. Each request method
takes the request (and ``now_ms`` where time matters) and returns a
:class:`metadata.result.ControllerResult`: the records to append as one batch and the response to
send once they have committed. Nothing here performs I/O, reads a clock or raises on bad input
(bad input gets Kafka error codes); an invariant violation in the stored state raises
:class:`metadata.election.InvariantViolation`, which the service turns into
UNKNOWN_SERVER_ERROR.

Writes must be serialized: compute a result on the current image, append it, replay the
committed entries, and only then compute the next one (metadata.service does exactly that).

Thread-safety: not thread-safe; one thread (the service's event thread) owns it. ``image`` is an
immutable object, so other threads may read the attribute at any time.
"""

from __future__ import annotations

import logging
import random
import uuid
from collections.abc import Callable, Iterable, Mapping

from common.error_codes import ErrorCode
from metadata import brokers, features, partitions, producer_ids, reassignment, topics
from metadata import topic_configs as configs
from metadata.controller_config import ControllerConfig
from metadata.delta import MetadataDelta
from metadata.election import TopicRules
from metadata.features import SupportedRange
from metadata.image import MetadataImage
from metadata.messages import (
    AllocateProducerIdsRequest,
    AllocateProducerIdsResponse,
    AlterConfigsRequest,
    AlterConfigsResponse,
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsResponse,
    AlterPartitionRequest,
    AlterPartitionResponse,
    BrokerDescription,
    BrokerHeartbeatRequest,
    BrokerHeartbeatResponse,
    ClusterDescription,
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    DescribeConfigsRequest,
    DescribeConfigsResponse,
    DescribeFeaturesResponse,
    ElectLeadersRequest,
    ElectLeadersResponse,
    Endpoint,
    IncrementalAlterConfigsRequest,
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsResponse,
    NodeFeatures,
    RegisterBrokerRequest,
    RegisterBrokerResponse,
    UpdateFeaturesRequest,
    UpdateFeaturesResponse,
)
from metadata.records import FeatureLevelRecord
from metadata.result import ControllerResult, RecordBudget
from metadata.snapshot import replay_entries
from raft.api import LogEntry

logger = logging.getLogger(__name__)

# Default bound on one append's record bytes; keep it <= the raft log's
# ``metadata.log.max.batch.bytes`` (1 MiB by default).
DEFAULT_MAX_APPEND_BYTES = 1024 * 1024


def _is_new_cluster(image: MetadataImage) -> bool:
    """Nothing but Raft control entries has been written (no broker, topic, config or
    security record)."""
    return (
        not image.brokers
        and not image.topics_by_id
        and not image.configs
        and image.next_producer_id == 0
        and image.security.is_empty()
    )


def _node_features(node_id: int, role: str, supported: SupportedRange | None) -> NodeFeatures:
    if supported is None:
        return NodeFeatures(node_id, role, 0, 0)
    return NodeFeatures(node_id, role, supported.min_level, supported.max_level)


def random_topic_id(rng: random.Random) -> uuid.UUID:
    """A random version-4 UUID from ``rng`` (never the all-zero id Kafka reserves)."""
    while True:
        value = uuid.UUID(int=rng.getrandbits(128), version=4)
        if value.int != 0:
            return value


class QuorumController:
    def __init__(
        self,
        config: ControllerConfig,
        *,
        cluster_id: str | None = None,
        rng: random.Random | None = None,
        max_append_bytes: int = DEFAULT_MAX_APPEND_BYTES,
        topic_id_factory: Callable[[], uuid.UUID] | None = None,
    ) -> None:
        self.config = config
        self.cluster_id = cluster_id
        self.rng = rng if rng is not None else random.Random()
        self.max_append_bytes = max_append_bytes
        self._new_topic_id = topic_id_factory or (lambda: random_topic_id(self.rng))
        self.image = MetadataImage()
        self.active_epoch: int | None = None
        self.sessions = brokers.BrokerHeartbeatManager(config.broker_session_timeout_ms)
        self._next_rebalance_ms = 0
        self._cleanup_needed = False
        self._bootstrap_features = False
        # (topic id, partition) of every partition with a reassignment in progress in ``image``
        # (kept up to date on replay, so the tick need not scan every partition).
        self.reassigning: set[tuple[uuid.UUID, int]] = set()

    # --- following the committed log ------------------------------------------------------------

    def replay(self, entries: Iterable[LogEntry]) -> None:
        """Apply committed entries (in offset order, starting right after ``image.offset``)."""
        delta = MetadataDelta(self.image)
        replay_entries(delta, entries)
        self.image = delta.apply()
        for topic in delta.removed_topics():
            self.reassigning = {k for k in self.reassigning if k[0] != topic.topic_id}
        for topic_id, pid, reg in delta.changed_partitions():
            if reg.is_reassigning:
                self.reassigning.add((topic_id, pid))
            else:
                self.reassigning.discard((topic_id, pid))

    def load_image(self, image: MetadataImage) -> None:
        """Replace the image (a snapshot was loaded)."""
        self.image = image
        self.reassigning = {
            (t.topic_id, pid) for t, pid, reg in image.iter_partitions() if reg.is_reassigning
        }

    # --- leadership -----------------------------------------------------------------------------

    @property
    def is_active(self) -> bool:
        return self.active_epoch is not None

    def activate(self, epoch: int, now_ms: int) -> None:
        """Become the active controller at ``epoch``. The caller has replayed the log up to the
        committed offset first. Every broker gets a full session timeout of grace."""
        self.active_epoch = epoch
        self.sessions = brokers.BrokerHeartbeatManager(self.config.broker_session_timeout_ms)
        self.sessions.reset(self.image.brokers, now_ms)
        self._next_rebalance_ms = (
            now_ms + self.config.leader_imbalance_check_interval_seconds * 1000
        )
        # A previous controller may have fenced a broker without finishing its elections.
        self._cleanup_needed = True
        # A new cluster's log: finalize the bootstrap metadata.version before anything else.
        self._bootstrap_features = not self.image.features and _is_new_cluster(self.image)
        logger.info("controller active at epoch %d (metadata offset %d)", epoch, self.image.offset)

    def deactivate(self) -> None:
        if self.active_epoch is not None:
            logger.info("controller inactive (was active at epoch %d)", self.active_epoch)
        self.active_epoch = None

    # --- requests -------------------------------------------------------------------------------

    def _rules(self, topic: str) -> TopicRules:
        elr = features.eligible_leader_replicas_enabled(features.finalized_level(self.image))
        return configs.election_rules(self.image.topic_config(topic), self.config, elr=elr)

    def register_broker(
        self, request: RegisterBrokerRequest, now_ms: int
    ) -> ControllerResult[RegisterBrokerResponse]:
        return brokers.register_broker(
            self.image, request, self.sessions, self.config, self.cluster_id, self._rules, now_ms
        )

    def broker_heartbeat(
        self, request: BrokerHeartbeatRequest, now_ms: int
    ) -> ControllerResult[BrokerHeartbeatResponse]:
        return brokers.broker_heartbeat(self.image, request, self.sessions, self._rules, now_ms)

    def broker_session_opened(self, broker_id: int, broker_epoch: int) -> int:
        """A broker opened its session stream: NO_ERROR when ``broker_epoch`` is its current
        registration, else STALE_BROKER_EPOCH (BROKER_ID_NOT_REGISTERED when unknown,
        NOT_CONTROLLER when this controller is not active)."""
        if not self.is_active:
            return ErrorCode.NOT_CONTROLLER
        b = self.image.brokers.get(broker_id)
        if b is None:
            return ErrorCode.BROKER_ID_NOT_REGISTERED
        if b.epoch != broker_epoch:
            return ErrorCode.STALE_BROKER_EPOCH
        self.sessions.stream_opened(broker_id)
        return ErrorCode.NO_ERROR

    def broker_session_lost(self, broker_id: int, broker_epoch: int) -> bool:
        """The session stream of registration ``broker_epoch`` broke (reset or end of stream:
        the broker's process is gone). An unfenced broker with that registration is fenced by
        the next :meth:`tick` instead of after ``broker.session.timeout.ms``; True then. A
        stream of an older registration, or of a broker already fenced, changes nothing."""
        if not self.is_active:
            return False
        b = self.image.brokers.get(broker_id)
        if b is None or b.epoch != broker_epoch or b.fenced:
            return False
        self.sessions.end_session(broker_id)
        return True

    def create_topics(self, request: CreateTopicsRequest) -> ControllerResult[CreateTopicsResponse]:
        return topics.create_topics(
            self.image, request, self.config, self.rng, self._new_topic_id, self.max_append_bytes
        )

    def delete_topics(self, request: DeleteTopicsRequest) -> ControllerResult[DeleteTopicsResponse]:
        return topics.delete_topics(self.image, request, self.config)

    def create_partitions(
        self, request: CreatePartitionsRequest
    ) -> ControllerResult[CreatePartitionsResponse]:
        return topics.create_partitions(
            self.image, request, self.config, self.rng, self.max_append_bytes
        )

    def alter_partition(
        self, request: AlterPartitionRequest
    ) -> ControllerResult[AlterPartitionResponse]:
        return partitions.alter_partition(self.image, request, self._rules)

    def elect_leaders(self, request: ElectLeadersRequest) -> ControllerResult[ElectLeadersResponse]:
        return partitions.elect_leaders(
            self.image, request, self.max_append_bytes, self.config.max_records_per_user_op
        )

    def alter_partition_reassignments(
        self, request: AlterPartitionReassignmentsRequest
    ) -> ControllerResult[AlterPartitionReassignmentsResponse]:
        return reassignment.alter_partition_reassignments(
            self.image, request, self.max_append_bytes, self.config.max_records_per_user_op
        )

    def list_partition_reassignments(
        self, request: ListPartitionReassignmentsRequest
    ) -> ListPartitionReassignmentsResponse:
        return reassignment.list_partition_reassignments(self.image, request)

    def allocate_producer_ids(
        self, request: AllocateProducerIdsRequest
    ) -> ControllerResult[AllocateProducerIdsResponse]:
        return producer_ids.allocate_producer_ids(self.image, request)

    def alter_configs(self, request: AlterConfigsRequest) -> ControllerResult[AlterConfigsResponse]:
        return configs.alter_configs(self.image, request)

    def incremental_alter_configs(
        self, request: IncrementalAlterConfigsRequest
    ) -> ControllerResult[AlterConfigsResponse]:
        return configs.incremental_alter_configs(self.image, request)

    # --- reads (any voter) ----------------------------------------------------------------------

    def describe_configs(self, request: DescribeConfigsRequest) -> DescribeConfigsResponse:
        return configs.describe_configs(self.image, request, self.config)

    def describe_cluster(self, controller_id: int | None) -> ClusterDescription:
        image = self.image
        return ClusterDescription(
            cluster_id=self.cluster_id,
            controller_id=controller_id,
            brokers=[
                BrokerDescription(
                    b.broker_id,
                    b.epoch,
                    [Endpoint(x.name, x.host, x.port) for x in b.listeners],
                    b.rack,
                    b.fenced,
                    b.in_controlled_shutdown,
                )
                for _, b in sorted(image.brokers.items())
            ],
            metadata_offset=image.offset,
        )

    # --- feature levels (metadata.features) -------------------------------------------------

    def describe_features(
        self, controllers: Mapping[int, SupportedRange | None]
    ) -> DescribeFeaturesResponse:
        """Finalized levels and every node's reported range; ``controllers``: every voter's."""
        nodes = [
            _node_features(node_id, "controller", supported)
            for node_id, supported in sorted(controllers.items())
        ]
        nodes.extend(
            _node_features(broker_id, "broker", self.sessions.supported(broker_id))
            for broker_id in sorted(self.image.brokers)
        )
        return DescribeFeaturesResponse(
            finalized={features.METADATA_VERSION: features.finalized_level(self.image)},
            metadata_offset=self.image.offset,
            nodes=nodes,
            levels=[
                [level, name, doc]
                for level, (name, doc) in sorted(features.METADATA_VERSIONS.items())
            ],
        )

    def update_features(
        self, request: UpdateFeaturesRequest, controllers: Mapping[int, SupportedRange | None]
    ) -> ControllerResult[UpdateFeaturesResponse]:
        """Raise a finalized level once every registered broker and every voter supports it;
        ``controllers``: every voter with the range it reported (None: not yet)."""
        current = features.finalized_level(self.image)
        outcome = features.validate_upgrade(
            request.feature,
            current,
            request.level,
            {b: self.sessions.supported(b) for b in self.image.brokers},
            controllers,
        )
        if outcome.error_code != ErrorCode.NO_ERROR:
            response = UpdateFeaturesResponse(outcome.error_code, outcome.message, current)
            return ControllerResult.of([], response)
        if request.validate_only or request.level == current:
            return ControllerResult.of([], UpdateFeaturesResponse(0, None, current))
        logger.info(
            "finalizing metadata.version %s (was %s)",
            features.level_name(request.level),
            features.level_name(current),
        )
        record = FeatureLevelRecord(request.feature, request.level)
        return ControllerResult.of([record], UpdateFeaturesResponse(0, None, request.level))

    # --- time -----------------------------------------------------------------------------------

    def tick(self, now_ms: int) -> ControllerResult[None] | None:
        """Periodic work of the active controller: fence brokers whose session expired (with
        the leader elections that follow; when they do not fit one append, the elections are
        finished by a cleanup pass on later ticks), else the completion of reassignments that
        can complete (normally AlterPartition completes them; this covers a completion that had
        to wait for a live leader), else preferred-leader rebalancing when due.
        Returns one batch to append, or None."""
        if not self.is_active:
            return None
        if self._bootstrap_features:
            self._bootstrap_features = False
            if not self.image.features:
                level = self.config.bootstrap_metadata_version
                logger.info(
                    "new cluster: finalizing metadata.version %s", features.level_name(level)
                )
                record = FeatureLevelRecord(features.METADATA_VERSION, level)
                return ControllerResult.of([record], None)
        budget = RecordBudget(self.max_append_bytes, self.config.max_records_per_user_op)
        if not brokers.expire_sessions(self.image, self.sessions, self._rules, now_ms, budget):
            self._cleanup_needed = True
        if budget.records:
            return budget.result(None)
        if self._cleanup_needed:
            self._cleanup_needed = not brokers.cleanup_records(
                self.image, self._rules, budget, self.sessions
            )
            if budget.records:
                return budget.result(None)
        if self.reassigning:
            records = reassignment.completion_records(
                self.image,
                self.reassigning,
                self.max_append_bytes,
                self.config.max_records_per_user_op,
            )
            if records:
                return ControllerResult.of(records, None)
        if self.config.auto_leader_rebalance_enable and now_ms >= self._next_rebalance_ms:
            self._next_rebalance_ms = (
                now_ms + self.config.leader_imbalance_check_interval_seconds * 1000
            )
            records = partitions.preferred_leader_records(
                self.image, self.max_append_bytes, self.config.max_records_per_user_op
            )
            if records:
                return ControllerResult.of(records, None)
        return None
