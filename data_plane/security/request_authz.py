"""Authorization of Kafka requests around the handlers (sans-IO).

The handlers stay unaware of ACLs: :meth:`RequestAuthorizer.check` looks at one decoded
request and returns a :class:`Verdict` that the connection layer applies:

- ``body``: the request the handler sees: resources the principal may not touch are removed
  (a Produce to an unwritable topic, a Fetch of an unreadable one, ...);
- ``respond_now``: a complete response; the handler is not called (JoinGroup to a group the
  principal may not read, InitProducerId without IdempotentWrite, ...);
- ``finish``: applied to the handler's response: removed resources come back as entries with
  TOPIC_AUTHORIZATION_FAILED / GROUP_AUTHORIZATION_FAILED / CLUSTER_AUTHORIZATION_FAILED (every
  requested partition is answered: kafka-python drops a Fetch response that omits one), and
  Metadata / OffsetFetch / ListGroups drop what the principal may not describe.

Operations checked, as in Kafka's KafkaApis:

    Produce               Write on topic
    Fetch                 Read on topic (consumer); ClusterAction on cluster (replica fetch)
    ListOffsets           Describe on topic
    Metadata              Describe on topic (others hidden); auto-create needs Create on the
                          cluster or on the topic
    OffsetForLeaderEpoch  Describe on topic (consumer); ClusterAction (replica)
    CreateTopics          Create on cluster or on topic
    DeleteTopics, DeleteRecords   Delete on topic
    CreatePartitions      Alter on topic
    DescribeConfigs       DescribeConfigs on topic / cluster (broker resources)
    AlterConfigs, IncrementalAlterConfigs   AlterConfigs on topic / cluster (broker resources)
    InitProducerId        IdempotentWrite on cluster or Write on some topic (KIP-679);
                          Write on the transactional id when one is given
    FindCoordinator       Describe on group / transactional id
    AddPartitionsToTxn    Write on the transactional id, Write on each topic; v4+ (partition
                          leaders verifying a transaction) ClusterAction on the cluster
    AddOffsetsToTxn       Write on the transactional id, Read on the group
    EndTxn                Write on the transactional id
    TxnOffsetCommit       Write on the transactional id, Read on the group and the topics
    WriteTxnMarkers       ClusterAction on the cluster (coordinators and the abort tool)
    DescribeTransactions  Describe on each transactional id
    ListTransactions      only transactional ids it may describe
    DescribeProducers     Read on topic
    JoinGroup, SyncGroup, Heartbeat, LeaveGroup   Read on group
    OffsetCommit          Read on group, Read on topic
    OffsetFetch           Describe on group, Describe on topic
    DescribeGroups        Describe on group
    ListGroups            Describe on cluster, else only groups it may describe

Thread-safety: stateless apart from the authorizer (itself thread-safe); runs on the loop.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from common.config_resources import RESOURCE_BROKER, RESOURCE_BROKER_LOGGER, RESOURCE_TOPIC
from common.error_codes import ErrorCode
from common.protocol.api_keys import (
    FIND_COORDINATOR_BATCHED_SINCE,
    OFFSET_FETCH_GROUPS_SINCE,
    ApiKey,
)
from common.protocol.fetch_replica import fetch_replica_id
from common.protocol.messages.delete_groups import DeleteGroupsResponseResult
from common.protocol.messages.describe_groups import DescribeGroupsResponseGroup
from common.protocol.messages.find_coordinator import (
    FindCoordinatorResponse,
    FindCoordinatorResponseCoordinator,
)
from common.protocol.topic_id_versions import DELETE_TOPICS_BY_ID_SINCE, ZERO_ID
from common.security.acl import (
    CLUSTER_OPERATIONS,
    CLUSTER_RESOURCE_NAME,
    TOPIC_OPERATIONS,
    AclOperation,
    Authorizer,
    ResourceType,
    operations_bitfield,
)
from common.security.principal import KafkaPrincipal

Body = dict[str, Any]
TOPIC_DENIED = int(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
GROUP_DENIED = int(ErrorCode.GROUP_AUTHORIZATION_FAILED)
CLUSTER_DENIED = int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
TXN_DENIED = int(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
# AddPartitionsToTxn v4+ batches transactions and verifies partitions: broker to broker.
FIRST_BROKER_ADD_PARTITIONS_VERSION = 4


@dataclass(slots=True)
class Verdict:
    body: Body
    respond_now: Body | None = None
    finish: Callable[[Body], Body] | None = None
    # Resources refused (for the kraftlog_authorization_denied_total metric), by type.
    denied: dict[ResourceType, int] | None = None

    @staticmethod
    def refused(body: Body, response: Body, rtype: ResourceType, count: int = 1) -> Verdict:
        """The request answered at once with ``response`` (the handler is not called);
        ``count`` resources of ``rtype`` are counted as denied."""
        v = Verdict(body, respond_now=response)
        v.note(rtype, count)
        return v

    def note(self, rtype: ResourceType, count: int = 1) -> None:
        if count:
            if self.denied is None:
                self.denied = {}
            self.denied[rtype] = self.denied.get(rtype, 0) + count


@dataclass(frozen=True, slots=True)
class Session:
    """Who sent a request: the authenticated principal and the client's IP address."""

    principal: KafkaPrincipal
    host: str


class RequestAuthorizer:
    """``topic_exists(name)`` tells Metadata which requested topics would be auto-created."""

    def __init__(self, authorizer: Authorizer, topic_exists: Callable[[str], bool]) -> None:
        self.authorizer = authorizer
        self._topic_exists = topic_exists
        self._checks: dict[int, Callable[[Session, int, Body], Verdict]] = {
            ApiKey.PRODUCE: self._produce,
            ApiKey.FETCH: self._fetch,
            ApiKey.LIST_OFFSETS: self._list_offsets,
            ApiKey.METADATA: self._metadata,
            ApiKey.OFFSET_FOR_LEADER_EPOCH: self._offset_for_leader_epoch,
            ApiKey.CREATE_TOPICS: self._create_topics,
            ApiKey.DELETE_TOPICS: self._delete_topics,
            ApiKey.DELETE_RECORDS: self._delete_records,
            ApiKey.CREATE_PARTITIONS: self._create_partitions,
            ApiKey.DESCRIBE_CONFIGS: self._describe_configs,
            ApiKey.ALTER_CONFIGS: self._alter_configs,
            ApiKey.INCREMENTAL_ALTER_CONFIGS: self._alter_configs,
            ApiKey.INIT_PRODUCER_ID: self._init_producer_id,
            ApiKey.FIND_COORDINATOR: self._find_coordinator,
            ApiKey.ADD_PARTITIONS_TO_TXN: self._add_partitions_to_txn,
            ApiKey.ADD_OFFSETS_TO_TXN: self._add_offsets_to_txn,
            ApiKey.END_TXN: self._end_txn,
            ApiKey.TXN_OFFSET_COMMIT: self._txn_offset_commit,
            ApiKey.WRITE_TXN_MARKERS: self._write_txn_markers,
            ApiKey.DESCRIBE_TRANSACTIONS: self._describe_transactions,
            ApiKey.LIST_TRANSACTIONS: self._list_transactions,
            ApiKey.DESCRIBE_PRODUCERS: self._describe_producers,
            ApiKey.DESCRIBE_LOG_DIRS: self._describe_log_dirs,
            ApiKey.ELECT_LEADERS: self._elect_leaders,
            ApiKey.DESCRIBE_CLUSTER: self._describe_cluster,
            ApiKey.DESCRIBE_QUORUM: self._describe_quorum,
            ApiKey.UPDATE_FEATURES: self._update_features,
            ApiKey.OFFSET_DELETE: self._offset_delete,
            ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: self._describe_scram,
            ApiKey.DESCRIBE_TOPIC_PARTITIONS: self._describe_topic_partitions,
            ApiKey.ALTER_USER_SCRAM_CREDENTIALS: self._alter_scram,
            ApiKey.DELETE_GROUPS: self._delete_groups,
            ApiKey.JOIN_GROUP: self._group_read,
            ApiKey.SYNC_GROUP: self._group_read,
            ApiKey.HEARTBEAT: self._group_read,
            ApiKey.LEAVE_GROUP: self._group_read,
            ApiKey.OFFSET_COMMIT: self._offset_commit,
            ApiKey.OFFSET_FETCH: self._offset_fetch,
            ApiKey.DESCRIBE_GROUPS: self._describe_groups,
            ApiKey.LIST_GROUPS: self._list_groups,
            ApiKey.CONSUMER_GROUP_HEARTBEAT: self._consumer_group_heartbeat,
            ApiKey.CONSUMER_GROUP_DESCRIBE: self._consumer_group_describe,
        }

    def check(self, session: Session, api_key: int, version: int, body: Body) -> Verdict:
        """The verdict for one request (APIs not listed pass unchanged)."""
        fn = self._checks.get(api_key)
        if fn is None:
            return Verdict(body)
        return fn(session, version, body)

    # --- helpers ------------------------------------------------------------------------------

    def _allowed(self, s: Session, op: AclOperation, rtype: ResourceType, name: str) -> bool:
        return self.authorizer.authorize(s.principal, s.host, op, rtype, name)

    def _topic(self, s: Session, op: AclOperation, name: str) -> bool:
        return self._allowed(s, op, ResourceType.TOPIC, name)

    def _cluster(self, s: Session, op: AclOperation) -> bool:
        return self._allowed(s, op, ResourceType.CLUSTER, CLUSTER_RESOURCE_NAME)

    def _group(self, s: Session, op: AclOperation, name: str) -> bool:
        return self._allowed(s, op, ResourceType.GROUP, name)

    def _split_topics(
        self,
        s: Session,
        body: Body,
        op: AclOperation,
        *,
        list_key: str = "topics",
        name_key: str = "name",
    ) -> tuple[Body, list[dict[str, Any]]]:
        """(body with only the allowed topics, the denied topic entries)."""
        items = body.get(list_key) or []
        allowed, denied = [], []
        cache: dict[str, bool] = {}
        for item in items:
            name = item.get(name_key, "")
            if name is None:
                # A topic id this broker does not know (data_plane.broker.topic_ids): there is
                # nothing to protect, and the handler answers UNKNOWN_TOPIC_ID.
                allowed.append(item)
                continue
            ok = cache.get(name)
            if ok is None:
                ok = cache[name] = self._topic(s, op, name)
            (allowed if ok else denied).append(item)
        if not denied:
            return body, []
        new = dict(body)
        new[list_key] = allowed
        return new, denied

    @staticmethod
    def _append(response: Body, list_key: str, entries: list[dict[str, Any]]) -> Body:
        response[list_key] = list(response.get(list_key) or []) + entries
        return response

    @classmethod
    def _with_denied_topics(
        cls, new: Body, denied: int, list_key: str, entries: list[dict[str, Any]]
    ) -> Verdict:
        """The request without its ``denied`` topics; their error ``entries`` are appended to
        the response's ``list_key`` when it comes back."""
        v = Verdict(new)
        v.note(ResourceType.TOPIC, denied)
        v.finish = lambda r: cls._append(r, list_key, entries)
        return v

    # --- data APIs ----------------------------------------------------------------------------

    def _produce(self, s: Session, version: int, body: Body) -> Verdict:
        if body.get("transactional_id") is not None and not self._allowed(
            s, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, body["transactional_id"]
        ):
            denied_all = body.get("topic_data") or []
            return self._produce_denied(body, denied_all, TXN_DENIED)
        new, denied = self._split_topics(s, body, AclOperation.WRITE, list_key="topic_data")
        if not denied:
            return Verdict(body)
        return self._produce_denied(new, denied, TOPIC_DENIED)

    def _produce_denied(self, new: Body, denied: list[dict[str, Any]], code: int) -> Verdict:
        entries = [
            {
                "name": t.get("name", ""),
                "partition_responses": [
                    {"index": p.get("index", 0), "error_code": code, "base_offset": -1}
                    for p in t.get("partition_data") or []
                ],
            }
            for t in denied
        ]
        v = Verdict(new if code == TOPIC_DENIED else {**new, "topic_data": []})
        v.note(ResourceType.TOPIC, len(denied))
        v.finish = lambda r: self._append(r, "responses", entries)
        return v

    def _fetch(self, s: Session, version: int, body: Body) -> Verdict:
        topics = body.get("topics") or []
        if fetch_replica_id(version, body) >= 0:
            if self._cluster(s, AclOperation.CLUSTER_ACTION):
                return Verdict(body)
            v = Verdict({**body, "topics": []})
            v.note(ResourceType.CLUSTER)
            v.finish = lambda r: self._fetch_errors(r, topics, CLUSTER_DENIED, version)
            return v
        new, denied = self._split_topics(s, body, AclOperation.READ, name_key="topic")
        if not denied:
            return Verdict(body)
        v = Verdict(new)
        v.note(ResourceType.TOPIC, len(denied))
        v.finish = lambda r: self._fetch_errors(r, denied, TOPIC_DENIED, version)
        return v

    def _fetch_errors(
        self, response: Body, denied: list[dict[str, Any]], code: int, version: int
    ) -> Body:
        entries = [
            {
                "topic": t.get("topic") or "",
                "topic_id": t.get("topic_id") or ZERO_ID,
                "partitions": [
                    {
                        "partition_index": p.get("partition", 0),
                        "error_code": code,
                        "high_watermark": -1,
                        "records": None,
                    }
                    for p in t.get("partitions") or []
                ],
            }
            for t in denied
        ]
        if code == CLUSTER_DENIED and version >= 7:
            response["error_code"] = code
        return self._append(response, "responses", entries)

    def _list_offsets(self, s: Session, version: int, body: Body) -> Verdict:
        new, denied = self._split_topics(s, body, AclOperation.DESCRIBE)
        if not denied:
            return Verdict(body)
        entries = [
            {
                "name": t.get("name", ""),
                "partitions": [
                    {"partition_index": p.get("partition_index", 0), "error_code": TOPIC_DENIED}
                    for p in t.get("partitions") or []
                ],
            }
            for t in denied
        ]
        return self._with_denied_topics(new, len(denied), "topics", entries)

    def _offset_for_leader_epoch(self, s: Session, version: int, body: Body) -> Verdict:
        replica = body.get("replica_id", -2) >= 0
        if replica:
            if self._cluster(s, AclOperation.CLUSTER_ACTION):
                return Verdict(body)
            new, denied = {**body, "topics": []}, list(body.get("topics") or [])
            code = CLUSTER_DENIED
        else:
            new, denied = self._split_topics(s, body, AclOperation.DESCRIBE, name_key="topic")
            code = TOPIC_DENIED
        if not denied:
            return Verdict(body)
        entries = [
            {
                "topic": t.get("topic", ""),
                "partitions": [
                    {"partition": p.get("partition", 0), "error_code": code}
                    for p in t.get("partitions") or []
                ],
            }
            for t in denied
        ]
        return self._with_denied_topics(new, len(denied), "topics", entries)

    def _metadata(self, s: Session, version: int, body: Body) -> Verdict:
        return self._with_authorized_operations(s, body, self._metadata_topics(s, version, body))

    def _with_authorized_operations(self, s: Session, body: Body, v: Verdict) -> Verdict:
        """Metadata v8+ asked for the cluster's or each topic's authorized operations: the
        bitfields of what this session may do (the handler's are for no authorizer)."""
        want_cluster = body.get("include_cluster_authorized_operations")
        want_topics = body.get("include_topic_authorized_operations")
        if not (want_cluster or want_topics) or v.respond_now is not None:
            return v
        first = v.finish

        def authorized(response: Body) -> Body:
            if first is not None:
                response = first(response)
            if want_cluster:
                response["cluster_authorized_operations"] = self._cluster_operations(s)
            if want_topics:
                for t in response.get("topics") or []:
                    if t.get("error_code", 0) == ErrorCode.NO_ERROR:
                        t["topic_authorized_operations"] = self._topic_operations(
                            s, t.get("name", "")
                        )
            return response

        v.finish = authorized
        return v

    def _cluster_operations(self, s: Session) -> int:
        # Kafka: the operations allowed, if Describe on the cluster is; else none.
        if not self._cluster(s, AclOperation.DESCRIBE):
            return 0
        return operations_bitfield(op for op in CLUSTER_OPERATIONS if self._cluster(s, op))

    def _topic_operations(self, s: Session, name: str) -> int:
        return operations_bitfield(op for op in TOPIC_OPERATIONS if self._topic(s, op, name))

    def _metadata_topics(self, s: Session, version: int, body: Body) -> Verdict:
        requested = body.get("topics")
        all_topics = requested is None or (version == 0 and not requested)
        if all_topics:
            v = Verdict(body)
            v.finish = lambda r: self._hide_topics(s, r)
            return v
        names = [t.get("name", "") for t in requested]
        # None: a topic id this broker does not know (answered UNKNOWN_TOPIC_ID).
        describable = {n for n in names if n is None or self._topic(s, AclOperation.DESCRIBE, n)}
        new = body
        if body.get("allow_auto_topic_creation", True):
            missing = [n for n in describable if n is not None and not self._topic_exists(n)]
            may_create = self._cluster(s, AclOperation.CREATE) or all(
                self._topic(s, AclOperation.CREATE, n) for n in missing
            )
            if missing and not may_create:
                new = {**body, "allow_auto_topic_creation": False}
        denied = [n for n in names if n not in describable]
        if not denied:
            return Verdict(new)
        # The handler still sees every requested name (an empty v0 list would mean "all");
        # the answers for the denied names are replaced afterwards.
        v = Verdict({**new, "allow_auto_topic_creation": False})
        v.note(ResourceType.TOPIC, len(set(denied)))
        denied_set = set(denied)

        def finish(response: Body) -> Body:
            out = []
            for t in response.get("topics") or []:
                if t.get("name") in denied_set:
                    out.append(
                        {
                            "error_code": TOPIC_DENIED,
                            "name": t.get("name"),
                            "is_internal": False,
                            "partitions": [],
                        }
                    )
                else:
                    out.append(t)
            response["topics"] = out
            return response

        v.finish = finish
        return v

    def _hide_topics(self, s: Session, response: Body) -> Body:
        topics = response.get("topics") or []
        kept = [t for t in topics if self._topic(s, AclOperation.DESCRIBE, t.get("name", ""))]
        response["topics"] = kept
        return response

    # --- admin APIs ---------------------------------------------------------------------------

    def _create_topics(self, s: Session, version: int, body: Body) -> Verdict:
        if self._cluster(s, AclOperation.CREATE):
            return Verdict(body)
        new, denied = self._split_topics(s, body, AclOperation.CREATE)
        if not denied:
            return Verdict(body)
        entries = [
            {
                "name": t.get("name", ""),
                "error_code": TOPIC_DENIED,
                "error_message": "Authorization failed.",
            }
            for t in denied
        ]
        return self._with_denied_topics(new, len(denied), "topics", entries)

    def _delete_topics(self, s: Session, version: int, body: Body) -> Verdict:
        if version >= DELETE_TOPICS_BY_ID_SINCE:
            new, denied = self._split_topics(s, body, AclOperation.DELETE)
            if not denied:
                return Verdict(body)
            entries = [
                {
                    "name": t.get("name"),
                    "topic_id": t.get("topic_id") or ZERO_ID,
                    "error_code": TOPIC_DENIED,
                }
                for t in denied
            ]
            return self._with_denied_topics(new, len(denied), "responses", entries)
        names = body.get("topic_names") or []
        allowed = [n for n in names if self._topic(s, AclOperation.DELETE, n)]
        if len(allowed) == len(names):
            return Verdict(body)
        denied = [n for n in names if n not in allowed]
        entries = [{"name": n, "error_code": TOPIC_DENIED} for n in denied]
        v = Verdict({**body, "topic_names": allowed})
        v.note(ResourceType.TOPIC, len(denied))
        v.finish = lambda r: self._append(r, "responses", entries)
        return v

    def _delete_records(self, s: Session, version: int, body: Body) -> Verdict:
        new, denied = self._split_topics(s, body, AclOperation.DELETE)
        if not denied:
            return Verdict(body)
        entries = [
            {
                "name": t.get("name", ""),
                "partitions": [
                    {
                        "partition_index": p.get("partition_index", 0),
                        "low_watermark": -1,
                        "error_code": TOPIC_DENIED,
                    }
                    for p in t.get("partitions") or []
                ],
            }
            for t in denied
        ]
        return self._with_denied_topics(new, len(denied), "topics", entries)

    def _create_partitions(self, s: Session, version: int, body: Body) -> Verdict:
        new, denied = self._split_topics(s, body, AclOperation.ALTER)
        if not denied:
            return Verdict(body)
        entries = [
            {
                "name": t.get("name", ""),
                "error_code": TOPIC_DENIED,
                "error_message": "Authorization failed.",
            }
            for t in denied
        ]
        return self._with_denied_topics(new, len(denied), "results", entries)

    def _config_resources(
        self, s: Session, body: Body, op: AclOperation, others_allowed: bool
    ) -> tuple[list[dict[str, Any]], list[tuple[dict[str, Any], int]]]:
        """(allowed resources, denied ones with their error) of a configs request: ``op`` on
        each topic, or on the cluster for broker resources; other resource types pass when
        ``others_allowed`` (the handler answers them), else they need the cluster too."""
        allowed, denied = [], []
        for res in body.get("resources") or []:
            rtype = res.get("resource_type")
            if rtype == RESOURCE_TOPIC:
                ok = self._topic(s, op, res.get("resource_name", ""))
                code = TOPIC_DENIED
            elif rtype in (RESOURCE_BROKER, RESOURCE_BROKER_LOGGER) or not others_allowed:
                ok = self._cluster(s, op)
                code = CLUSTER_DENIED
            else:
                ok, code = True, 0
            if ok:
                allowed.append(res)
            else:
                denied.append((res, code))
        return allowed, denied

    def _configs_verdict(
        self,
        s: Session,
        body: Body,
        op: AclOperation,
        others_allowed: bool,
        list_key: str,
        extra: dict[str, Any],
    ) -> Verdict:
        """Forward the resources :meth:`_config_resources` allows; answer the denied ones in
        ``list_key`` (each with ``extra``)."""
        allowed, denied = self._config_resources(s, body, op, others_allowed)
        if not denied:
            return Verdict(body)
        entries = [
            {
                "error_code": code,
                "error_message": "Authorization failed.",
                "resource_type": res.get("resource_type"),
                "resource_name": res.get("resource_name", ""),
                **extra,
            }
            for res, code in denied
        ]
        v = Verdict({**body, "resources": allowed})
        v.note(ResourceType.TOPIC, len(denied))
        v.finish = lambda r: self._append(r, list_key, entries)
        return v

    def _alter_configs(self, s: Session, version: int, body: Body) -> Verdict:
        """AlterConfigs and IncrementalAlterConfigs: AlterConfigs on each topic, or on the
        cluster for broker resources; refused resources are answered, the rest forwarded."""
        return self._configs_verdict(s, body, AclOperation.ALTER_CONFIGS, False, "responses", {})

    def _describe_configs(self, s: Session, version: int, body: Body) -> Verdict:
        return self._configs_verdict(
            s, body, AclOperation.DESCRIBE_CONFIGS, True, "results", {"configs": []}
        )

    def _init_producer_id(self, s: Session, version: int, body: Body) -> Verdict:
        txn = body.get("transactional_id")
        if txn is not None:
            if self._allowed(s, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, txn):
                return Verdict(body)
            code, rtype = TXN_DENIED, ResourceType.TRANSACTIONAL_ID
        elif self._cluster(s, AclOperation.IDEMPOTENT_WRITE) or self.authorizer.authorize_any(
            s.principal, s.host, AclOperation.WRITE, ResourceType.TOPIC
        ):
            return Verdict(body)
        else:
            code, rtype = CLUSTER_DENIED, ResourceType.CLUSTER
        return Verdict.refused(
            body, {"error_code": code, "producer_id": -1, "producer_epoch": -1}, rtype
        )

    # --- transactions -------------------------------------------------------------------------

    def _txn_write(self, s: Session, txn: str) -> bool:
        return self._allowed(s, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, txn)

    def _add_partitions_to_txn(self, s: Session, version: int, body: Body) -> Verdict:
        if version >= FIRST_BROKER_ADD_PARTITIONS_VERSION:
            # Sent by partition leaders (verification): brokers only.
            if self._cluster(s, AclOperation.CLUSTER_ACTION):
                return Verdict(body)
            return Verdict.refused(
                body,
                {
                    "throttle_time_ms": 0,
                    "error_code": CLUSTER_DENIED,
                    "results_by_transaction": [],
                },
                ResourceType.CLUSTER,
            )
        topics = body.get("v3_and_below_topics") or []
        txn_ok = self._txn_write(s, body.get("v3_and_below_transactional_id", ""))
        denied_topics = {
            t["name"]
            for t in topics
            if not txn_ok or not self._topic(s, AclOperation.WRITE, t["name"])
        }
        if not denied_topics:
            return Verdict(body)
        code = TOPIC_DENIED if txn_ok else TXN_DENIED
        # Kafka answers the allowed partitions OPERATION_NOT_ATTEMPTED when any is refused.
        results = [
            {
                "name": t["name"],
                "results_by_partition": [
                    {
                        "partition_index": p,
                        "partition_error_code": (
                            code
                            if t["name"] in denied_topics
                            else int(ErrorCode.OPERATION_NOT_ATTEMPTED)
                        ),
                    }
                    for p in t.get("partitions") or ()
                ],
            }
            for t in topics
        ]
        return Verdict.refused(
            body,
            {"throttle_time_ms": 0, "results_by_topic_v3_and_below": results},
            ResourceType.TOPIC if txn_ok else ResourceType.TRANSACTIONAL_ID,
            len(denied_topics),
        )

    def _error_only(self, body: Body, code: int, rtype: ResourceType) -> Verdict:
        return Verdict.refused(body, {"throttle_time_ms": 0, "error_code": code}, rtype)

    def _add_offsets_to_txn(self, s: Session, version: int, body: Body) -> Verdict:
        if not self._txn_write(s, body.get("transactional_id", "")):
            return self._error_only(body, TXN_DENIED, ResourceType.TRANSACTIONAL_ID)
        if not self._group(s, AclOperation.READ, body.get("group_id", "")):
            return self._error_only(body, GROUP_DENIED, ResourceType.GROUP)
        return Verdict(body)

    def _end_txn(self, s: Session, version: int, body: Body) -> Verdict:
        if not self._txn_write(s, body.get("transactional_id", "")):
            return self._error_only(body, TXN_DENIED, ResourceType.TRANSACTIONAL_ID)
        return Verdict(body)

    def _txn_offset_commit(self, s: Session, version: int, body: Body) -> Verdict:
        if not self._txn_write(s, body.get("transactional_id", "")):
            topics = body.get("topics") or []
            return Verdict.refused(
                body,
                {"topics": _partition_errors(topics, TXN_DENIED)},
                ResourceType.TRANSACTIONAL_ID,
            )
        # Then what an OffsetCommit needs: Read on the group and on each topic.
        return self._offset_commit(s, version, body)

    def _write_txn_markers(self, s: Session, version: int, body: Body) -> Verdict:
        if self._cluster(s, AclOperation.CLUSTER_ACTION):
            return Verdict(body)
        markers = [
            {
                "producer_id": m["producer_id"],
                "topics": [
                    {
                        "name": t["name"],
                        "partitions": [
                            {"partition_index": p, "error_code": CLUSTER_DENIED}
                            for p in t.get("partition_indexes") or ()
                        ],
                    }
                    for t in m.get("topics") or ()
                ],
            }
            for m in body.get("markers") or ()
        ]
        return Verdict.refused(body, {"markers": markers}, ResourceType.CLUSTER)

    # --- groups -------------------------------------------------------------------------------

    def _find_coordinator(self, s: Session, version: int, body: Body) -> Verdict:
        key_type = body.key_type
        if key_type == 1:
            code, rtype = TXN_DENIED, ResourceType.TRANSACTIONAL_ID

            def allowed(key: str) -> bool:
                return self._allowed(s, AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, key)

        else:
            code, rtype = GROUP_DENIED, ResourceType.GROUP

            def allowed(key: str) -> bool:
                return self._group(s, AclOperation.DESCRIBE, key)

        message = "Authorization failed."
        if version < FIND_COORDINATOR_BATCHED_SINCE:
            if allowed(body.key):
                return Verdict(body)
            denied_answer = FindCoordinatorResponse(
                error_code=code, error_message=message, node_id=-1, host="", port=-1
            )
            return Verdict.refused(body, denied_answer, rtype)
        keys = body.coordinator_keys
        denied = [k for k in keys if not allowed(k)]
        if not denied:
            return Verdict(body)
        entries = [FindCoordinatorResponseCoordinator(k, -1, "", -1, code, message) for k in denied]
        v = Verdict(
            dataclasses.replace(body, coordinator_keys=[k for k in keys if k not in denied])
        )
        v.note(rtype, len(denied))

        def finish(response: Body) -> Body:
            response.coordinators = [*response.coordinators, *entries]
            return response

        v.finish = finish
        return v

    def _group_read(self, s: Session, version: int, body: Body) -> Verdict:
        if self._group(s, AclOperation.READ, body.get("group_id", "")):
            return Verdict(body)
        return Verdict.refused(
            body,
            {
                "error_code": GROUP_DENIED,
                "generation_id": -1,
                "protocol_name": "",
                "leader": "",
                "member_id": body.get("member_id", ""),
                "members": [],
                "assignment": b"",
            },
            ResourceType.GROUP,
        )

    def _offset_commit(self, s: Session, version: int, body: Body) -> Verdict:
        topics = body.get("topics") or []
        if not self._group(s, AclOperation.READ, body.get("group_id", "")):
            return Verdict.refused(
                body, {"topics": _partition_errors(topics, GROUP_DENIED)}, ResourceType.GROUP
            )
        new, denied = self._split_topics(s, body, AclOperation.READ)
        if not denied:
            return Verdict(body)
        entries = _partition_errors(denied, TOPIC_DENIED)
        return self._with_denied_topics(new, len(denied), "topics", entries)

    def _offset_fetch(self, s: Session, version: int, body: Body) -> Verdict:
        if version >= OFFSET_FETCH_GROUPS_SINCE:
            return self._offset_fetch_groups(s, body)
        topics = body.get("topics")
        if not self._group(s, AclOperation.DESCRIBE, body.get("group_id", "")):
            response: Body = {"topics": [], "error_code": GROUP_DENIED}
            if version < 2:
                response["topics"] = _offset_fetch_denied(topics or [], GROUP_DENIED)
            return Verdict.refused(body, response, ResourceType.GROUP)
        if topics is None:
            v = Verdict(body)

            def hide(response: Body) -> Body:
                response["topics"] = [
                    t
                    for t in response.get("topics") or []
                    if self._topic(s, AclOperation.DESCRIBE, t.get("name", ""))
                ]
                return response

            v.finish = hide
            return v
        new, denied = self._split_topics(s, body, AclOperation.DESCRIBE)
        if not denied:
            return Verdict(body)
        entries = _offset_fetch_denied(denied, TOPIC_DENIED)
        return self._with_denied_topics(new, len(denied), "topics", entries)

    def _offset_fetch_groups(self, s: Session, body: Body) -> Verdict:
        """OffsetFetch v8+ (several groups): a group the principal may not describe is
        answered GROUP_DENIED; within the others, topics it may not describe are answered
        TOPIC_DENIED per partition (listed ones) or left out (all topics asked). The handler
        answers the kept groups in request order, so their fixes go by position."""
        kept: list[dict[str, Any]] = []
        denied_groups: list[str] = []
        denied_topics: dict[int, list[dict[str, Any]]] = {}  # position in kept -> entries
        hide_in: set[int] = set()
        for g in body.get("groups") or []:
            gid = g.get("group_id", "")
            if not self._group(s, AclOperation.DESCRIBE, gid):
                denied_groups.append(gid)
                continue
            if g.get("topics") is None:
                hide_in.add(len(kept))
                kept.append(g)
                continue
            new, denied = self._split_topics(s, g, AclOperation.DESCRIBE)
            if denied:
                denied_topics[len(kept)] = _offset_fetch_denied(denied, TOPIC_DENIED)
            kept.append(new)
        if not denied_groups and not denied_topics and not hide_in:
            return Verdict(body)
        v = Verdict({**body, "groups": kept})
        if denied_groups:
            v.note(ResourceType.GROUP, len(denied_groups))
        if denied_topics:
            v.note(ResourceType.TOPIC, sum(len(t) for t in denied_topics.values()))

        def finish(response: Body) -> Body:
            for i, g in enumerate(response.get("groups") or []):
                topics = list(g.get("topics") or [])
                if i in hide_in:
                    topics = [
                        t
                        for t in topics
                        if self._topic(s, AclOperation.DESCRIBE, t.get("name", ""))
                    ]
                g["topics"] = topics + denied_topics.get(i, [])
            entries = [
                {"group_id": gid, "topics": [], "error_code": GROUP_DENIED} for gid in denied_groups
            ]
            return self._append(response, "groups", entries)

        v.finish = finish
        return v

    def _describe_groups(self, s: Session, version: int, body: Body) -> Verdict:
        groups = body.groups
        allowed = [g for g in groups if self._group(s, AclOperation.DESCRIBE, g)]
        if len(allowed) == len(groups):
            return Verdict(body)
        entries = [
            DescribeGroupsResponseGroup(error_code=GROUP_DENIED, group_id=g)
            for g in groups
            if g not in allowed
        ]
        v = Verdict(dataclasses.replace(body, groups=allowed))
        v.note(ResourceType.GROUP, len(entries))

        def finish(response: Body) -> Body:
            response.groups = [*response.groups, *entries]
            return response

        v.finish = finish
        return v

    def _consumer_group_heartbeat(self, s: Session, version: int, body: Body) -> Verdict:
        if self._group(s, AclOperation.READ, body.get("group_id", "")):
            return Verdict(body)
        return Verdict.refused(
            body,
            {
                "error_code": GROUP_DENIED,
                "error_message": None,
                "member_id": None,
                "member_epoch": -1,
                "heartbeat_interval_ms": 0,
                "assignment": None,
            },
            ResourceType.GROUP,
        )

    def _consumer_group_describe(self, s: Session, version: int, body: Body) -> Verdict:
        groups = body.get("group_ids") or []
        allowed = [g for g in groups if self._group(s, AclOperation.DESCRIBE, g)]
        if len(allowed) == len(groups):
            return Verdict(body)
        entries = [
            {
                "error_code": GROUP_DENIED,
                "error_message": None,
                "group_id": g,
                "group_state": "",
                "group_epoch": -1,
                "assignment_epoch": -1,
                "assignor_name": "",
                "members": [],
            }
            for g in groups
            if g not in allowed
        ]
        v = Verdict({**body, "group_ids": allowed})
        v.note(ResourceType.GROUP, len(entries))
        v.finish = lambda r: self._append(r, "groups", entries)
        return v

    def _list_groups(self, s: Session, version: int, body: Body) -> Verdict:
        if self._cluster(s, AclOperation.DESCRIBE):
            return Verdict(body)
        v = Verdict(body)

        def hide(response: Body) -> Body:
            response.groups = [
                g for g in response.groups if self._group(s, AclOperation.DESCRIBE, g.group_id)
            ]
            return response

        v.finish = hide
        return v

    def _describe_transactions(self, s: Session, version: int, body: Body) -> Verdict:
        ids = body.get("transactional_ids") or []
        allowed = [t for t in ids if self._may_describe_txn(s, t)]
        if len(allowed) == len(ids):
            return Verdict(body)
        entries = [
            {"error_code": TXN_DENIED, "transactional_id": t, "transaction_state": ""}
            for t in ids
            if t not in allowed
        ]
        v = Verdict({**body, "transactional_ids": allowed})
        v.note(ResourceType.TRANSACTIONAL_ID, len(entries))
        v.finish = lambda r: self._append(r, "transaction_states", entries)
        return v

    def _list_transactions(self, s: Session, version: int, body: Body) -> Verdict:
        v = Verdict(body)

        def hide(response: Body) -> Body:
            response["transaction_states"] = [
                t
                for t in response.get("transaction_states") or []
                if self._may_describe_txn(s, t.get("transactional_id", ""))
            ]
            return response

        v.finish = hide
        return v

    def _may_describe_txn(self, s: Session, transactional_id: str) -> bool:
        return self._allowed(
            s, AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, transactional_id
        )

    def _describe_cluster(self, s: Session, version: int, body: Body) -> Verdict:
        v = Verdict(body)
        if not body.get("include_cluster_authorized_operations"):
            return v

        def authorized(response: Body) -> Body:
            response["cluster_authorized_operations"] = self._cluster_operations(s)
            return response

        v.finish = authorized
        return v

    def _describe_quorum(self, s: Session, version: int, body: Body) -> Verdict:
        if self._cluster(s, AclOperation.DESCRIBE):
            return Verdict(body)
        return Verdict.refused(
            body,
            {
                "error_code": CLUSTER_DENIED,
                "error_message": None,
                "topics": [],
                "nodes": [],
            },
            ResourceType.CLUSTER,
        )

    def _describe_topic_partitions(self, s: Session, version: int, body: Body) -> Verdict:
        """Topics the caller may not describe: hidden when all were asked for, else
        TOPIC_AUTHORIZATION_FAILED; the others carry the caller's authorized operations."""
        listed = bool(body.get("topics"))
        v = Verdict(body)

        def finish(response: Body) -> Body:
            out = []
            for t in response.get("topics") or []:
                name = t.get("name") or ""
                if t.get("error_code") == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                    out.append(t)
                elif not self._topic(s, AclOperation.DESCRIBE, name):
                    v.note(ResourceType.TOPIC)
                    if listed:
                        out.append({**t, "error_code": TOPIC_DENIED, "partitions": []})
                else:
                    out.append(
                        {**t, "topic_authorized_operations": self._topic_operations(s, name)}
                    )
            response["topics"] = out
            return response

        v.finish = finish
        return v

    def _describe_scram(self, s: Session, version: int, body: Body) -> Verdict:
        if self._cluster(s, AclOperation.DESCRIBE):
            return Verdict(body)
        return Verdict.refused(
            body,
            {
                "throttle_time_ms": 0,
                "error_code": CLUSTER_DENIED,
                "error_message": None,
                "results": [],
            },
            ResourceType.CLUSTER,
        )

    def _alter_scram(self, s: Session, version: int, body: Body) -> Verdict:
        if self._cluster(s, AclOperation.ALTER):
            return Verdict(body)
        changes = [*(body.get("deletions") or ()), *(body.get("upsertions") or ())]
        names = dict.fromkeys(x.get("name", "") for x in changes)
        results = [{"user": n, "error_code": CLUSTER_DENIED, "error_message": None} for n in names]
        return Verdict.refused(
            body, {"throttle_time_ms": 0, "results": results}, ResourceType.CLUSTER
        )

    def _delete_groups(self, s: Session, version: int, body: Body) -> Verdict:
        names = body.groups_names
        denied = [g for g in names if not self._group(s, AclOperation.DELETE, g)]
        if not denied:
            return Verdict(body)
        v = Verdict(dataclasses.replace(body, groups_names=[g for g in names if g not in denied]))
        v.note(ResourceType.GROUP, len(set(denied)))
        entries = [DeleteGroupsResponseResult(g, GROUP_DENIED) for g in dict.fromkeys(denied)]

        def finish(response: Body) -> Body:
            response.results = [*response.results, *entries]
            return response

        v.finish = finish
        return v

    def _offset_delete(self, s: Session, version: int, body: Body) -> Verdict:
        if not self._group(s, AclOperation.DELETE, body.get("group_id") or ""):
            return Verdict.refused(
                body,
                {"error_code": GROUP_DENIED, "throttle_time_ms": 0, "topics": []},
                ResourceType.GROUP,
            )
        new, denied = self._split_topics(s, body, AclOperation.READ)
        if not denied:
            return Verdict(body)
        entries = [
            {
                "name": t.get("name", ""),
                "partitions": [
                    {"partition_index": p.get("partition_index", -1), "error_code": TOPIC_DENIED}
                    for p in t.get("partitions") or ()
                ],
            }
            for t in denied
        ]
        return self._with_denied_topics(new, len(denied), "topics", entries)

    def _update_features(self, s: Session, version: int, body: Body) -> Verdict:
        if self._cluster(s, AclOperation.ALTER):
            return Verdict(body)
        results = [
            {
                "feature": u.get("feature", ""),
                "error_code": CLUSTER_DENIED,
                "error_message": None,
            }
            for u in body.get("feature_updates") or ()
        ]
        return Verdict.refused(
            body,
            {
                "throttle_time_ms": 0,
                "error_code": CLUSTER_DENIED,
                "error_message": None,
                "results": results,
            },
            ResourceType.CLUSTER,
        )

    def _elect_leaders(self, s: Session, version: int, body: Body) -> Verdict:
        if self._cluster(s, AclOperation.ALTER):
            return Verdict(body)
        results = [
            {
                "topic": t.get("topic", ""),
                "partition_result": [
                    {"partition_id": p, "error_code": CLUSTER_DENIED, "error_message": None}
                    for p in t.get("partitions") or ()
                ],
            }
            for t in body.get("topic_partitions") or ()
        ]
        return Verdict.refused(
            body,
            {
                "throttle_time_ms": 0,
                "error_code": CLUSTER_DENIED,
                "replica_election_results": results,
            },
            ResourceType.CLUSTER,
        )

    def _describe_log_dirs(self, s: Session, version: int, body: Body) -> Verdict:
        if self._cluster(s, AclOperation.DESCRIBE):
            return Verdict(body)
        error = CLUSTER_DENIED if version >= 3 else ErrorCode.NO_ERROR
        return Verdict.refused(
            body, {"throttle_time_ms": 0, "error_code": error, "results": []}, ResourceType.CLUSTER
        )

    def _describe_producers(self, s: Session, version: int, body: Body) -> Verdict:
        new, denied = self._split_topics(s, body, AclOperation.READ)
        if not denied:
            return Verdict(body)
        entries = [
            {
                "name": t.get("name", ""),
                "partitions": [
                    {"partition_index": i, "error_code": TOPIC_DENIED, "active_producers": []}
                    for i in t.get("partition_indexes") or []
                ],
            }
            for t in denied
        ]
        v = Verdict(new)
        v.note(ResourceType.TOPIC, len(denied))
        v.finish = lambda r: self._append(r, "topics", entries)
        return v


def _partition_errors(topics: list[dict[str, Any]], code: int) -> list[dict[str, Any]]:
    return [
        {
            "name": t.get("name", ""),
            "partitions": [
                {"partition_index": p.get("partition_index", 0), "error_code": code}
                for p in t.get("partitions") or []
            ],
        }
        for t in topics
    ]


def _offset_fetch_denied(topics: list[dict[str, Any]], code: int) -> list[dict[str, Any]]:
    """OffsetFetch answers for ``topics`` (request entries): every listed partition ``code``."""
    return [
        {
            "name": t.get("name", ""),
            "partitions": [
                {
                    "partition_index": p,
                    "committed_offset": -1,
                    "metadata": "",
                    "error_code": code,
                }
                for p in t.get("partition_indexes") or []
            ],
        }
        for t in topics
    ]
