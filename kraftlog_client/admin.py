"""The native admin client: topics, offsets and the cluster, over the Kafka protocol.

    admin = Admin({"bootstrap.servers": "127.0.0.1:9092"})
    admin.create_topics([NewTopic("events", num_partitions=6, replication_factor=1)])
    admin.describe_topics(["events"])        # {"events": TopicInfo(...)}
    admin.list_offsets({TopicPartition("events", 0): "latest"})
    admin.describe_cluster()   # ClusterDescription(cluster_id, controller_id, brokers)
    admin.delete_topics(["events"])
    admin.list_groups(); admin.describe_groups(["billing"])      # consumer groups
    admin.list_consumer_group_offsets("billing")                 # {TopicPartition: offset}
    admin.alter_consumer_group_offsets("billing", {tp: 0})       # only while the group is empty
    admin.list_transactions(); admin.describe_transaction("etl-1")  # transactions
    admin.describe_producers(tp); admin.abort_transaction(tp, pid, epoch, coordinator_epoch)
    admin.complete_transaction(prepared, commit=True)     # 2nd phase of prepare_transaction()
    admin.create_acls([binding]); admin.describe_acls(AclBindingFilter())   # ACLs
    admin.delete_acls([AclBindingFilter(principal="User:alice")])
    admin.alter_client_quotas([ClientQuotaAlteration(entity, (ClientQuotaOp(key, 1e6),))])
    admin.describe_client_quotas([ClientQuotaFilterComponent.of_entity("user", "alice")])
    admin.alter_partition_reassignments({TopicPartition("events", 0): [2, 3, 4]})  # None cancels
    admin.list_partition_reassignments()     # {TopicPartition: PartitionReassignment}
    admin.close()

CreateTopics, DeleteTopics and DescribeConfigs go to any broker, which forwards them to the
active controller. Per-topic failures raise :class:`TopicOperationError` listing every failed
topic with its Kafka error (after the others succeeded, as Kafka's admin client reports them).

Not thread-safe: one thread at a time (the calls are blocking and bounded by their timeout).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from common.config_resources import OP_DELETE, OP_SET, RESOURCE_TOPIC, SOURCE_DEFAULT
from common.error_codes import ErrorCode
from common.protocol.api_keys import ApiKey
from common.protocol.codec import Body
from common.protocol.message_base import Message
from common.protocol.messages.create_partitions import (
    CreatePartitionsRequest,
    CreatePartitionsRequestTopic,
    CreatePartitionsResponse,
)
from common.protocol.messages.create_topics import (
    CreateTopicsRequest,
    CreateTopicsRequestConfig,
    CreateTopicsRequestTopic,
    CreateTopicsResponse,
)
from common.protocol.messages.delete_topics import DeleteTopicsRequest, DeleteTopicsResponse
from common.protocol.messages.describe_configs import (
    DescribeConfigsRequest,
    DescribeConfigsRequestResource,
    DescribeConfigsResponse,
    DescribeConfigsResponseConfig,
)
from common.protocol.messages.incremental_alter_configs import (
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsRequestConfig,
    IncrementalAlterConfigsRequestResource,
    IncrementalAlterConfigsResponse,
)
from common.security.acl import AclBinding, AclBindingFilter
from common.topic_partition import TopicPartition
from kraftlog_client import acl_admin, quota_admin
from kraftlog_client.config import AdminConfig, client_config
from kraftlog_client.errors import ClientClosedError, KafkaError
from kraftlog_client.group_admin import (
    GroupDescription,
    GroupListing,
    commit_offsets_while_empty,
    delete_group,
    describe_group,
    fetch_offsets,
    list_groups,
)
from kraftlog_client.metadata import BrokerInfo, TopicInfo
from kraftlog_client.network_client import NetworkClient
from kraftlog_client.offsets import OffsetAndTimestamp, list_offsets
from kraftlog_client.quota_admin import (
    ClientQuotaAlteration,
    ClientQuotaEntity,
    ClientQuotaFilterComponent,
)
from kraftlog_client.reassignment_admin import (
    PartitionReassignment,
    alter_partition_reassignments,
    list_partition_reassignments,
)
from kraftlog_client.subscription import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP
from kraftlog_client.transaction_admin import (
    ProducerState,
    TransactionDescription,
    TransactionListing,
    abort_transaction,
    complete_transaction,
    describe_producers,
    describe_transaction,
    list_transactions,
)
from kraftlog_client.transaction_manager import PreparedTxnState


@dataclass(frozen=True)
class NewTopic:
    name: str
    num_partitions: int = -1  # -1 = the broker's num.partitions
    replication_factor: int = -1  # -1 = default.replication.factor
    configs: Mapping[str, str] = field(default_factory=dict)


class ClusterDescription(NamedTuple):
    cluster_id: str | None
    controller_id: int
    brokers: tuple[BrokerInfo, ...]


class TopicOperationError(KafkaError):
    """Some topics of a create/delete failed: ``errors`` maps topic name to its KafkaError."""

    def __init__(self, operation: str, errors: dict[str, KafkaError]) -> None:
        first = next(iter(errors.values()))
        detail = "; ".join(f"{name}: {err}" for name, err in errors.items())
        super().__init__(first.code, f"{operation} failed for {detail}")
        self.errors = errors


class Admin:
    def __init__(
        self, config: Mapping[str, Any] | AdminConfig | None = None, **kwargs: Any
    ) -> None:
        if isinstance(config, AdminConfig):
            self.config = config
        else:
            self.config = client_config(AdminConfig, config, **kwargs)
        self._client = NetworkClient(self.config, max_in_flight=1)
        self._closed = False

    def _timeout(self, timeout_ms: float | None) -> float:
        self._check_open()
        return float(self.config.default_api_timeout_ms if timeout_ms is None else timeout_ms)

    def _request(self, api_key: int, body: dict[str, Any] | Message, timeout_ms: float) -> Body:
        return self._client.request(None, api_key, body, timeout_ms)

    # -- topics --------------------------------------------------------------------------

    def create_topics(
        self,
        topics: Sequence[NewTopic],
        *,
        validate_only: bool = False,
        timeout_ms: float | None = None,
    ) -> None:
        """Create ``topics``; returns once the controller committed them (the brokers learn
        them shortly after; describe_topics shows when leaders are elected)."""
        timeout = self._timeout(timeout_ms)
        request = CreateTopicsRequest(
            topics=[
                CreateTopicsRequestTopic(
                    name=t.name,
                    num_partitions=t.num_partitions,
                    replication_factor=t.replication_factor,
                    assignments=[],
                    configs=[
                        CreateTopicsRequestConfig(name=k, value=v) for k, v in t.configs.items()
                    ],
                )
                for t in topics
            ],
            timeout_ms=int(timeout),
            validate_only=validate_only,
        )
        response = self._request(ApiKey.CREATE_TOPICS, request, timeout)
        if not isinstance(response, CreateTopicsResponse):
            raise TypeError(f"CreateTopics decoded as {type(response).__name__}")
        self._raise_topic_errors(
            "CreateTopics", [(t.name, t.error_code, t.error_message) for t in response.topics]
        )

    def delete_topics(self, names: Iterable[str], *, timeout_ms: float | None = None) -> None:
        timeout = self._timeout(timeout_ms)
        request = DeleteTopicsRequest(topic_names=list(names), timeout_ms=int(timeout))
        response = self._request(ApiKey.DELETE_TOPICS, request, timeout)
        if not isinstance(response, DeleteTopicsResponse):
            raise TypeError(f"DeleteTopics decoded as {type(response).__name__}")
        self._raise_topic_errors(
            "DeleteTopics", [(r.name, r.error_code, r.error_message) for r in response.responses]
        )

    @staticmethod
    def _raise_topic_errors(
        operation: str, results: Iterable[tuple[str | None, int, str | None]]
    ) -> None:
        """Raise :class:`TopicOperationError` for the (name, error code, error message)
        results that carry an error."""
        errors = {
            name or "": KafkaError(code, message or "") for name, code, message in results if code
        }
        if errors:
            raise TopicOperationError(operation, errors)

    def describe_topics(
        self, names: Iterable[str] | None = None, *, timeout_ms: float | None = None
    ) -> dict[str, TopicInfo]:
        """Partitions, leaders, replicas and ISR of ``names`` (all topics when None).
        A topic that does not exist raises :class:`TopicOperationError`."""
        topics = None if names is None else list(names)
        self._client.fetch_metadata(topics, self._timeout(timeout_ms))
        metadata = self._client.metadata
        wanted = sorted(metadata.topics) if topics is None else topics
        errors = {
            t: KafkaError(metadata.topics[t].error_code if t in metadata.topics else 3, t)
            for t in wanted
            if t not in metadata.topics or metadata.topics[t].error_code
        }
        if errors:
            raise TopicOperationError("DescribeTopics", errors)
        return {t: metadata.topics[t] for t in wanted}

    def list_topics(self, *, timeout_ms: float | None = None) -> list[str]:
        return sorted(
            name
            for name, info in self.describe_topics(timeout_ms=timeout_ms).items()
            if not info.is_internal
        )

    def describe_configs(
        self, topic: str, *, timeout_ms: float | None = None
    ) -> dict[str, str | None]:
        """The effective configuration of ``topic``."""
        entries = self.describe_config_entries(RESOURCE_TOPIC, [topic], timeout_ms=timeout_ms)
        return {entry.name: entry.value for entry in entries.get(topic, [])}

    def create_partitions(
        self, totals: Mapping[str, int], *, timeout_ms: float | None = None
    ) -> None:
        """Grow each topic to ``totals[topic]`` partitions (CreatePartitions); raises
        :class:`TopicOperationError` for the topics that failed."""
        timeout = self._timeout(timeout_ms)
        request = CreatePartitionsRequest(
            topics=[
                CreatePartitionsRequestTopic(name=name, count=count, assignments=None)
                for name, count in totals.items()
            ],
            timeout_ms=int(timeout),
            validate_only=False,
        )
        response = self._request(ApiKey.CREATE_PARTITIONS, request, timeout)
        if not isinstance(response, CreatePartitionsResponse):
            raise TypeError(f"CreatePartitions decoded as {type(response).__name__}")
        self._raise_topic_errors(
            "CreatePartitions", [(r.name, r.error_code, r.error_message) for r in response.results]
        )

    def incremental_alter_configs(
        self,
        topic: str,
        sets: Mapping[str, str],
        deletes: Iterable[str] = (),
        *,
        timeout_ms: float | None = None,
    ) -> None:
        """Set and delete overrides of ``topic`` (IncrementalAlterConfigs); raises
        :class:`KafkaError` if the cluster refuses."""
        timeout = self._timeout(timeout_ms)
        configs = [
            IncrementalAlterConfigsRequestConfig(name=k, config_operation=OP_SET, value=v)
            for k, v in sets.items()
        ]
        configs += [
            IncrementalAlterConfigsRequestConfig(name=k, config_operation=OP_DELETE, value=None)
            for k in deletes
        ]
        request = IncrementalAlterConfigsRequest(
            resources=[
                IncrementalAlterConfigsRequestResource(
                    resource_type=RESOURCE_TOPIC, resource_name=topic, configs=configs
                )
            ],
            validate_only=False,
        )
        response = self._request(ApiKey.INCREMENTAL_ALTER_CONFIGS, request, timeout)
        if not isinstance(response, IncrementalAlterConfigsResponse):
            raise TypeError(f"IncrementalAlterConfigs decoded as {type(response).__name__}")
        for r in response.responses:
            if r.error_code:
                raise KafkaError(r.error_code, r.error_message or topic)

    def describe_config_entries(
        self,
        resource_type: int,
        names: Sequence[str],
        *,
        node_id: int | None = None,
        timeout_ms: float | None = None,
    ) -> dict[str, list[DescribeConfigsResponseConfig]]:
        """DescribeConfigs of ``names`` (``resource_type`` 2 = topic, 4 = broker), every
        entry with its flags (``value``, ``is_default``, ``read_only``, ``config_source``,
        ...); sent to broker ``node_id`` if given (a broker describes only its own
        configuration). A resource the broker refuses raises its KafkaError."""
        timeout = self._timeout(timeout_ms)
        if node_id is not None:
            self._client.fetch_metadata([], timeout)  # learns the brokers' addresses
            if node_id not in self._client.metadata.brokers:
                raise KafkaError(ErrorCode.BROKER_NOT_AVAILABLE, f"no broker {node_id}")
        request = DescribeConfigsRequest(
            resources=[
                DescribeConfigsRequestResource(
                    resource_type=resource_type, resource_name=name, configuration_keys=None
                )
                for name in names
            ],
            include_synonyms=False,
            include_documentation=False,
        )
        response = self._client.request(node_id, ApiKey.DESCRIBE_CONFIGS, request, timeout)
        if not isinstance(response, DescribeConfigsResponse):
            raise TypeError(f"DescribeConfigs decoded as {type(response).__name__}")
        out: dict[str, list[DescribeConfigsResponseConfig]] = {}
        for result in response.results:
            if result.error_code:
                raise KafkaError(result.error_code, result.error_message or result.resource_name)
            out[result.resource_name] = [
                # v0 flags defaults with is_default; v1+ replaced it by config_source.
                dataclasses.replace(
                    entry, is_default=entry.is_default or entry.config_source == SOURCE_DEFAULT
                )
                for entry in result.configs
            ]
        return out

    # -- offsets and cluster -------------------------------------------------------------

    def list_offsets(
        self,
        specs: Mapping[TopicPartition, str | int],
        *,
        timeout_ms: float | None = None,
    ) -> dict[TopicPartition, OffsetAndTimestamp]:
        """Offsets per partition for "earliest", "latest" (the high watermark) or a
        timestamp in ms (the first offset at or after it; -1 if none)."""
        timestamps: dict[TopicPartition, int] = {}
        for tp, spec in specs.items():
            if spec == "earliest":
                timestamps[tp] = EARLIEST_TIMESTAMP
            elif spec == "latest":
                timestamps[tp] = LATEST_TIMESTAMP
            elif isinstance(spec, int) and spec >= 0:
                timestamps[tp] = spec
            else:
                raise ValueError(f"offset spec {spec!r}: use earliest, latest or a timestamp")
        return list_offsets(
            self._client, timestamps, self._timeout(timeout_ms), self.config.retry_backoff_ms
        )

    def describe_cluster(self, *, timeout_ms: float | None = None) -> ClusterDescription:
        response = self._client.fetch_metadata([], self._timeout(timeout_ms))
        brokers = tuple(
            sorted(
                (
                    BrokerInfo(b["node_id"], b["host"], b["port"], b.get("rack"))
                    for b in response.get("brokers", [])
                ),
                key=lambda b: b.node_id,
            )
        )
        return ClusterDescription(
            response.get("cluster_id"), response.get("controller_id", -1), brokers
        )

    def wait_for_leaders(self, names: Iterable[str], *, timeout_ms: float = 30000) -> None:
        """Block until every partition of ``names`` has a leader (new topics need a moment)."""
        topics = list(names)
        deadline = time.monotonic() + timeout_ms / 1000.0
        while True:
            try:
                infos = self.describe_topics(topics, timeout_ms=timeout_ms)
                if all(p.leader >= 0 for info in infos.values() for p in info.partitions) and all(
                    info.partitions for info in infos.values()
                ):
                    return
            except KafkaError as e:
                if not (e.retriable or e.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION):
                    raise
            if time.monotonic() >= deadline:
                raise KafkaError(
                    ErrorCode.LEADER_NOT_AVAILABLE, f"no leaders for {topics} in {timeout_ms} ms"
                )
            time.sleep(min(0.1, max(0.0, deadline - time.monotonic())))

    # -- consumer groups -----------------------------------------------------------------

    def _deadline(self, timeout_ms: float | None) -> float:
        return time.monotonic() + self._timeout(timeout_ms) / 1000.0

    def list_groups(self, *, timeout_ms: float | None = None) -> list[GroupListing]:
        """Every group of the cluster (each broker lists those it coordinates)."""
        return list_groups(
            self._client, self._deadline(timeout_ms), float(self.config.request_timeout_ms)
        )

    def describe_groups(
        self, group_ids: Iterable[str], *, timeout_ms: float | None = None
    ) -> dict[str, GroupDescription]:
        """State, chosen assignor and members (with their partitions) of each group; a group
        nobody uses is described as state "Dead" with no members, as Kafka does."""
        deadline = self._deadline(timeout_ms)
        backoff = self.config.retry_backoff_ms
        return {g: describe_group(self._client, g, deadline, backoff) for g in group_ids}

    def list_consumer_group_offsets(
        self,
        group_id: str,
        partitions: Iterable[TopicPartition] | None = None,
        *,
        timeout_ms: float | None = None,
    ) -> dict[TopicPartition, int]:
        """Committed offsets of the group (of ``partitions``, or all)."""
        return fetch_offsets(
            self._client,
            group_id,
            partitions,
            self._deadline(timeout_ms),
            self.config.retry_backoff_ms,
        )

    def alter_consumer_group_offsets(
        self,
        group_id: str,
        offsets: Mapping[TopicPartition, int],
        *,
        timeout_ms: float | None = None,
    ) -> None:
        """Set committed offsets; raises KafkaError NON_EMPTY_GROUP while members are active."""
        commit_offsets_while_empty(
            self._client,
            group_id,
            offsets,
            self._deadline(timeout_ms),
            self.config.retry_backoff_ms,
        )

    def delete_groups(self, group_ids: Iterable[str], *, timeout_ms: float | None = None) -> None:
        """Delete empty groups with their offsets (DeleteGroups)."""
        deadline = self._deadline(timeout_ms)
        for g in group_ids:
            delete_group(self._client, g, deadline, self.config.retry_backoff_ms)

    # -- transactions --------------------------------------------------------------------

    def list_transactions(
        self,
        *,
        states: Iterable[str] = (),
        producer_ids: Iterable[int] = (),
        min_duration_ms: int = -1,
        timeout_ms: float | None = None,
    ) -> list[TransactionListing]:
        """Every transactional id of the cluster matching the filters (empty: all; a
        duration keeps transactions running longer than it)."""
        return list_transactions(
            self._client,
            self._deadline(timeout_ms),
            float(self.config.request_timeout_ms),
            states=states,
            producer_ids=producer_ids,
            min_duration_ms=min_duration_ms,
        )

    def describe_transaction(
        self, transactional_id: str, *, timeout_ms: float | None = None
    ) -> TransactionDescription:
        """State, producer id and epoch, timeout, start time and partitions of one id."""
        return describe_transaction(
            self._client,
            transactional_id,
            self._deadline(timeout_ms),
            self.config.retry_backoff_ms,
        )

    def describe_producers(
        self, tp: TopicPartition, *, timeout_ms: float | None = None
    ) -> list[ProducerState]:
        """The producers ``tp``'s leader keeps state for (open transactions included)."""
        return describe_producers(
            self._client, tp, self._deadline(timeout_ms), self.config.retry_backoff_ms
        )

    def abort_transaction(
        self,
        tp: TopicPartition,
        producer_id: int,
        producer_epoch: int,
        coordinator_epoch: int,
        *,
        timeout_ms: float | None = None,
    ) -> None:
        """Abort ``producer_id``'s open transaction on ``tp`` by writing an ABORT marker there
        (for a hanging transaction its coordinator no longer knows)."""
        abort_transaction(
            self._client,
            tp,
            producer_id,
            producer_epoch,
            coordinator_epoch,
            self._deadline(timeout_ms),
            self.config.retry_backoff_ms,
        )

    def complete_transaction(
        self, prepared: PreparedTxnState, commit: bool, *, timeout_ms: float | None = None
    ) -> None:
        """Commit (or abort) a transaction another producer prepared
        (``Producer.prepare_transaction``); ending it the same way twice is harmless."""
        complete_transaction(
            self._client,
            prepared,
            commit,
            self._deadline(timeout_ms),
            self.config.retry_backoff_ms,
        )

    # -- ACLs ----------------------------------------------------------------------------

    def create_acls(
        self, bindings: Sequence[AclBinding], *, timeout_ms: float | None = None
    ) -> None:
        """Create ``bindings``; raises the KafkaError of the first that failed."""
        acl_admin.create_acls(self._client, bindings, self._timeout(timeout_ms))

    def describe_acls(
        self, acl_filter: AclBindingFilter, *, timeout_ms: float | None = None
    ) -> list[AclBinding]:
        """The bindings matching ``acl_filter``."""
        return acl_admin.describe_acls(self._client, acl_filter, self._timeout(timeout_ms))

    def delete_acls(
        self, filters: Sequence[AclBindingFilter], *, timeout_ms: float | None = None
    ) -> list[list[AclBinding]]:
        """Delete the bindings matching each filter; returns what each filter matched."""
        return acl_admin.delete_acls(self._client, filters, self._timeout(timeout_ms))

    # -- client quotas -------------------------------------------------------------------

    def describe_client_quotas(
        self,
        components: Sequence[ClientQuotaFilterComponent] = (),
        *,
        strict: bool = False,
        timeout_ms: float | None = None,
    ) -> dict[ClientQuotaEntity, dict[str, float]]:
        """The quotas of the entities matching every component (no component: all of them;
        ``strict``: only entities without other entity types)."""
        return quota_admin.describe_client_quotas(
            self._client, components, strict, self._timeout(timeout_ms)
        )

    def alter_client_quotas(
        self,
        alterations: Sequence[ClientQuotaAlteration],
        *,
        validate_only: bool = False,
        timeout_ms: float | None = None,
    ) -> None:
        """Set or remove quotas; raises the KafkaError of the first entry that failed."""
        quota_admin.alter_client_quotas(
            self._client, alterations, validate_only, self._timeout(timeout_ms)
        )

    # -- partition reassignment -----------------------------------------------------------

    def alter_partition_reassignments(
        self,
        reassignments: Mapping[TopicPartition, Sequence[int] | None],
        *,
        allow_replication_factor_change: bool = True,
        timeout_ms: float | None = None,
    ) -> dict[TopicPartition, KafkaError | None]:
        """Move each partition's replicas to its target (the first broker becomes the
        preferred leader), or cancel its move (None). Per partition: None if accepted, else
        its KafkaError; a refusal of the whole request raises KafkaError. Without
        ``allow_replication_factor_change`` a target of another size than the partition's
        replication factor is refused (INVALID_REPLICATION_FACTOR)."""
        return alter_partition_reassignments(
            self._client,
            reassignments,
            self._timeout(timeout_ms),
            allow_replication_factor_change,
        )

    def list_partition_reassignments(
        self,
        partitions: Iterable[TopicPartition] | None = None,
        *,
        timeout_ms: float | None = None,
    ) -> dict[TopicPartition, PartitionReassignment]:
        """The moves in progress (among ``partitions``, or of every partition)."""
        return list_partition_reassignments(self._client, partitions, self._timeout(timeout_ms))

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._client.close()

    def _check_open(self) -> None:
        if self._closed:
            raise ClientClosedError("the admin client is closed")

    def __enter__(self) -> Admin:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
