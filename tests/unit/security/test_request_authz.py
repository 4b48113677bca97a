"""RequestAuthorizer with the handler registry's rules: what the handler sees and what the
client gets back, per API. Every test runs the rules through :class:`DeclaredAclsOnly`, which
fails when a rule looks up an ACL its registry entry does not declare."""

from __future__ import annotations

import dataclasses

import pytest

from common.error_codes import ErrorCode
from common.protocol.api_keys import ApiKey
from common.protocol.codec import RequestHeader, encode_response
from common.protocol.messages.add_offsets_to_txn import AddOffsetsToTxnRequest
from common.protocol.messages.add_partitions_to_txn import (
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnRequestTopic,
    AddPartitionsToTxnRequestTransaction,
)
from common.protocol.messages.alter_configs import (
    AlterConfigsRequest,
    AlterConfigsRequestConfig,
    AlterConfigsRequestResource,
    AlterConfigsResponse,
    AlterConfigsResponseResponse,
)
from common.protocol.messages.consumer_group_describe import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
)
from common.protocol.messages.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from common.protocol.messages.create_partitions import (
    CreatePartitionsRequest,
    CreatePartitionsRequestTopic,
    CreatePartitionsResponse,
)
from common.protocol.messages.create_topics import (
    CreateTopicsRequest,
    CreateTopicsRequestTopic,
    CreateTopicsResponse,
    CreateTopicsResponseTopic,
)
from common.protocol.messages.delete_groups import (
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    DeleteGroupsResponseResult,
)
from common.protocol.messages.delete_records import (
    DeleteRecordsRequest,
    DeleteRecordsRequestPartition,
    DeleteRecordsRequestTopic,
    DeleteRecordsResponse,
    DeleteRecordsResponsePartition,
    DeleteRecordsResponseTopic,
)
from common.protocol.messages.delete_topics import (
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    DeleteTopicsResponseResponse,
)
from common.protocol.messages.describe_cluster import (
    DescribeClusterRequest,
    DescribeClusterResponse,
)
from common.protocol.messages.describe_configs import (
    DescribeConfigsRequest,
    DescribeConfigsRequestResource,
    DescribeConfigsResponse,
)
from common.protocol.messages.describe_groups import (
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    DescribeGroupsResponseGroup,
)
from common.protocol.messages.describe_log_dirs import (
    DescribeLogDirsRequest,
    DescribeLogDirsResponse,
)
from common.protocol.messages.describe_producers import (
    DescribeProducersRequest,
    DescribeProducersRequestTopic,
    DescribeProducersResponse,
    DescribeProducersResponseTopic,
)
from common.protocol.messages.describe_quorum import (
    DescribeQuorumRequest,
    DescribeQuorumRequestPartition,
    DescribeQuorumRequestTopic,
)
from common.protocol.messages.describe_topic_partitions import (
    DescribeTopicPartitionsRequest,
    DescribeTopicPartitionsRequestTopic,
    DescribeTopicPartitionsResponse,
    DescribeTopicPartitionsResponsePartition,
    DescribeTopicPartitionsResponseTopic,
)
from common.protocol.messages.describe_transactions import (
    DescribeTransactionsRequest,
    DescribeTransactionsResponse,
    DescribeTransactionsResponseTransactionState,
)
from common.protocol.messages.elect_leaders import (
    ElectLeadersRequest,
    ElectLeadersRequestTopicPartition,
)
from common.protocol.messages.end_txn import EndTxnRequest
from common.protocol.messages.find_coordinator import (
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    FindCoordinatorResponseCoordinator,
)
from common.protocol.messages.heartbeat import HeartbeatRequest
from common.protocol.messages.incremental_alter_configs import (
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsRequestConfig,
    IncrementalAlterConfigsRequestResource,
    IncrementalAlterConfigsResponse,
    IncrementalAlterConfigsResponseResponse,
)
from common.protocol.messages.init_producer_id import InitProducerIdRequest
from common.protocol.messages.join_group import JoinGroupRequest, JoinGroupResponse
from common.protocol.messages.leave_group import LeaveGroupRequest, LeaveGroupRequestMember
from common.protocol.messages.list_groups import (
    ListGroupsRequest,
    ListGroupsResponse,
    ListGroupsResponseGroup,
)
from common.protocol.messages.list_offsets import (
    ListOffsetsRequest,
    ListOffsetsRequestPartition,
    ListOffsetsRequestTopic,
    ListOffsetsResponse,
    ListOffsetsResponsePartition,
    ListOffsetsResponseTopic,
)
from common.protocol.messages.list_transactions import (
    ListTransactionsRequest,
    ListTransactionsResponse,
    ListTransactionsResponseTransactionState,
)
from common.protocol.messages.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
    OffsetCommitResponsePartition,
)
from common.protocol.messages.offset_delete import (
    OffsetDeleteRequest,
    OffsetDeleteRequestPartition,
    OffsetDeleteRequestTopic,
    OffsetDeleteResponse,
    OffsetDeleteResponsePartition,
    OffsetDeleteResponseTopic,
)
from common.protocol.messages.offset_fetch import (
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchRequestGroupTopic,
    OffsetFetchRequestTopic,
    OffsetFetchResponse,
    OffsetFetchResponseGroup,
    OffsetFetchResponseGroupTopic,
    OffsetFetchResponseTopic,
)
from common.protocol.messages.offset_for_leader_epoch import (
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochRequestPartition,
    OffsetForLeaderEpochRequestTopic,
    OffsetForLeaderEpochResponse,
    OffsetForLeaderEpochResponsePartition,
)
from common.protocol.messages.sync_group import SyncGroupRequest
from common.protocol.messages.txn_offset_commit import (
    TxnOffsetCommitRequest,
    TxnOffsetCommitRequestPartition,
    TxnOffsetCommitRequestTopic,
    TxnOffsetCommitResponse,
)
from common.protocol.messages.update_features import (
    UpdateFeaturesRequest,
    UpdateFeaturesRequestFeatureUpdate,
)
from common.protocol.messages.write_txn_markers import (
    WriteTxnMarkersRequest,
    WriteTxnMarkersRequestMarker,
    WriteTxnMarkersRequestTopic,
)
from common.security.acl import (
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    Authorizer,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from common.security.principal import KafkaPrincipal
from data_plane.broker.handlers import HANDLERS, authorization_rules
from data_plane.security.request_authz import Body, RequestAuthorizer, Session, Verdict

ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY
Op = AclOperation
T, G, C = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER
TOPIC_DENIED = ErrorCode.TOPIC_AUTHORIZATION_FAILED
GROUP_DENIED = ErrorCode.GROUP_AUTHORIZATION_FAILED
CLUSTER_DENIED = ErrorCode.CLUSTER_AUTHORIZATION_FAILED


def acl(rtype, name, op, perm=ALLOW, principal="User:reader", ptype=PatternType.LITERAL):
    return AclBinding(
        ResourcePattern(rtype, name, ptype), AccessControlEntry(principal, "*", op, perm)
    )


BINDINGS = [
    acl(T, "readable", Op.READ),
    acl(T, "writable", Op.WRITE),
    acl(G, "app", Op.READ),
    acl(T, "new-", Op.CREATE, ptype=PatternType.PREFIXED),
    acl(T, "denied", Op.ALL, DENY),
    acl(T, "denied", Op.READ, ALLOW),
]
READER = Session(KafkaPrincipal("User", "reader"), "127.0.0.1")
EXISTING = {"readable", "writable", "secret", "denied"}


class UndeclaredAclError(AssertionError):
    pass


class DeclaredAclsOnly(RequestAuthorizer):
    """A RequestAuthorizer that raises :class:`UndeclaredAclError` when a rule (or the
    ``finish`` of its verdict) looks up an ACL outside its API's ``HANDLERS[key].acls``."""

    _api: ApiKey | None = None

    def check(self, session: Session, api_key: int, version: int, body: Body) -> Verdict:
        api = ApiKey(api_key)
        v = self._as(api, lambda: super(DeclaredAclsOnly, self).check(session, api, version, body))
        first = v.finish
        if first is not None:
            v.finish = lambda response: self._as(api, lambda: first(response))
        return v

    def _as(self, api: ApiKey, fn):
        self._api = api
        try:
            return fn()
        finally:
            self._api = None

    def _declared(self, op: AclOperation, rtype: ResourceType) -> None:
        assert self._api is not None, "an ACL looked up outside any rule"
        if (op, rtype) not in HANDLERS[self._api].acls:
            raise UndeclaredAclError(f"{self._api.name} checks {op.name} on {rtype.name}")

    def allowed(self, s: Session, op: AclOperation, rtype: ResourceType, name: str) -> bool:
        self._declared(op, rtype)
        return super().allowed(s, op, rtype, name)

    def allowed_any(self, s: Session, op: AclOperation, rtype: ResourceType) -> bool:
        self._declared(op, rtype)
        return super().allowed_any(s, op, rtype)


def authz(bindings=BINDINGS) -> RequestAuthorizer:
    return DeclaredAclsOnly(
        Authorizer(["User:admin"], bindings=bindings), EXISTING.__contains__, authorization_rules()
    )


def encodes(api: ApiKey, version: int, response: dict) -> None:
    """The merged response is still encodable by the codec."""
    encode_response(RequestHeader(int(api), version, 1, "c"), response)


def test_produce_denied_topics_answered_with_errors() -> None:
    body = {
        "acks": 1,
        "timeout_ms": 1000,
        "topic_data": [
            {"name": "writable", "partition_data": [{"index": 0, "records": b""}]},
            {
                "name": "readable",
                "partition_data": [{"index": 0, "records": b""}, {"index": 1, "records": b""}],
            },
        ],
    }
    v = authz().check(READER, ApiKey.PRODUCE, 7, body)
    assert [t["name"] for t in v.body["topic_data"]] == ["writable"]
    assert [t["name"] for t in body["topic_data"]] == ["writable", "readable"]  # not mutated
    handler_response = {
        "responses": [
            {
                "name": "writable",
                "partition_responses": [{"index": 0, "error_code": 0, "base_offset": 5}],
            }
        ]
    }
    out = v.finish(handler_response)
    denied = out["responses"][1]
    assert denied["name"] == "readable"
    assert [p["error_code"] for p in denied["partition_responses"]] == [TOPIC_DENIED] * 2
    assert v.denied == {T: 1}
    encodes(ApiKey.PRODUCE, 7, out)


def test_fetch_answers_every_partition_and_replica_fetch_needs_cluster_action() -> None:
    body = {
        "replica_id": -1,
        "max_wait_ms": 0,
        "min_bytes": 0,
        "topics": [
            {
                "topic": "readable",
                "partitions": [{"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1}],
            },
            {
                "topic": "writable",
                "partitions": [{"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1}],
            },
        ],
    }
    v = authz().check(READER, ApiKey.FETCH, 11, body)
    assert [t["topic"] for t in v.body["topics"]] == ["readable"]
    out = v.finish({"responses": [{"topic": "readable", "partitions": []}]})
    assert out["responses"][1]["partitions"][0]["error_code"] == TOPIC_DENIED
    encodes(ApiKey.FETCH, 11, out)
    replica = {**body, "replica_id": 2}
    v = authz().check(READER, ApiKey.FETCH, 11, replica)
    assert v.body["topics"] == []
    out = v.finish({"responses": []})
    assert out["error_code"] == CLUSTER_DENIED
    assert len(out["responses"]) == 2
    broker = Session(KafkaPrincipal("User", "broker"), "127.0.0.1")
    with_action = [*BINDINGS, acl(C, "kafka-cluster", Op.CLUSTER_ACTION, principal="User:broker")]
    assert authz(with_action).check(broker, ApiKey.FETCH, 11, replica).finish is None


def test_deny_wins_over_allow_on_the_same_topic() -> None:
    body = {"topics": [{"topic": "denied", "partitions": [{"partition": 0, "fetch_offset": 0}]}]}
    v = authz().check(READER, ApiKey.FETCH, 4, body)
    assert v.body["topics"] == []


def test_metadata_hides_undescribable_topics() -> None:
    v = authz().check(READER, ApiKey.METADATA, 8, {"topics": None})
    listed = {"topics": [{"name": n, "error_code": 0, "partitions": []} for n in sorted(EXISTING)]}
    assert [t["name"] for t in v.finish(listed)["topics"]] == ["readable", "writable"]
    # v0: an empty list means every topic.
    v = authz().check(READER, ApiKey.METADATA, 0, {"topics": []})
    assert v.finish is not None


def test_metadata_named_topics_and_auto_create() -> None:
    body = {"topics": [{"name": "readable"}, {"name": "secret"}], "allow_auto_topic_creation": True}
    v = authz().check(READER, ApiKey.METADATA, 8, body)
    assert v.body["allow_auto_topic_creation"] is False  # secret must not be auto-created
    response = {
        "brokers": [],
        "topics": [
            {"name": "readable", "error_code": 0, "partitions": [{"partition_index": 0}]},
            {"name": "secret", "error_code": 0, "partitions": [{"partition_index": 0}]},
        ],
    }
    out = v.finish(response)
    assert [(t["name"], t["error_code"]) for t in out["topics"]] == [
        ("readable", 0),
        ("secret", TOPIC_DENIED),
    ]
    assert out["topics"][1]["partitions"] == []
    encodes(ApiKey.METADATA, 8, out)
    # Describable but missing: auto-create only with Create (here granted by a prefix ACL).
    more = [*BINDINGS, acl(T, "new-", Op.DESCRIBE, ptype=PatternType.PREFIXED)]
    v = authz(more).check(READER, ApiKey.METADATA, 8, {"topics": [{"name": "new-x"}]})
    assert v.body.get("allow_auto_topic_creation", True) is True and v.finish is None
    more = [*BINDINGS, acl(T, "other", Op.DESCRIBE)]
    v = authz(more).check(READER, ApiKey.METADATA, 8, {"topics": [{"name": "other"}]})
    assert v.body["allow_auto_topic_creation"] is False


def test_create_delete_configs() -> None:
    body = CreateTopicsRequest(
        topics=[
            CreateTopicsRequestTopic(name="new-a", num_partitions=1),
            CreateTopicsRequestTopic(name="other", num_partitions=1),
        ]
    )
    v = authz().check(READER, ApiKey.CREATE_TOPICS, 4, body)
    assert [t.name for t in v.body.topics] == ["new-a"]
    out = v.finish(CreateTopicsResponse(topics=[CreateTopicsResponseTopic(name="new-a")]))
    assert out.topics[1] == CreateTopicsResponseTopic(
        name="other", error_code=TOPIC_DENIED, error_message="Authorization failed."
    )
    encodes(ApiKey.CREATE_TOPICS, 4, out)
    request = DeleteTopicsRequest(topic_names=["readable"], timeout_ms=1)
    v = authz().check(READER, ApiKey.DELETE_TOPICS, 3, request)
    assert v.body.topic_names == []
    assert v.finish(DeleteTopicsResponse()).responses == [
        DeleteTopicsResponseResponse(name="readable", error_code=TOPIC_DENIED)
    ]
    describe = DescribeConfigsRequest(
        resources=[
            DescribeConfigsRequestResource(resource_type=2, resource_name="readable"),
            DescribeConfigsRequestResource(resource_type=4, resource_name="1"),
        ]
    )
    v = authz().check(READER, ApiKey.DESCRIBE_CONFIGS, 2, describe)
    assert v.body.resources == []
    out = v.finish(DescribeConfigsResponse())
    assert [r.error_code for r in out.results] == [TOPIC_DENIED, CLUSTER_DENIED]
    assert [r.resource_name for r in out.results] == ["readable", "1"]
    encodes(ApiKey.DESCRIBE_CONFIGS, 2, out)


def test_init_producer_id() -> None:
    idempotent = InitProducerIdRequest(transactional_id=None)
    v = authz().check(READER, ApiKey.INIT_PRODUCER_ID, 1, idempotent)
    assert v.respond_now is None  # Write on some topic suffices (KIP-679)
    nobody = Session(KafkaPrincipal("User", "nobody"), "1.1.1.1")
    v = authz().check(nobody, ApiKey.INIT_PRODUCER_ID, 1, idempotent)
    assert v.respond_now.error_code == CLUSTER_DENIED
    assert (v.respond_now.producer_id, v.respond_now.producer_epoch) == (-1, -1)
    encodes(ApiKey.INIT_PRODUCER_ID, 1, v.respond_now)
    idem = [*BINDINGS, acl(C, "kafka-cluster", Op.IDEMPOTENT_WRITE, principal="User:nobody")]
    request = InitProducerIdRequest()
    assert authz(idem).check(nobody, ApiKey.INIT_PRODUCER_ID, 1, request).respond_now is None


def test_groups() -> None:
    az = authz()
    joining = JoinGroupRequest(group_id="app", member_id="m-1")
    assert az.check(READER, ApiKey.JOIN_GROUP, 5, joining).respond_now is None
    v = az.check(READER, ApiKey.HEARTBEAT, 3, HeartbeatRequest(group_id="other"))
    assert v.respond_now.error_code == GROUP_DENIED
    encodes(ApiKey.HEARTBEAT, 3, v.respond_now)
    joining = dataclasses.replace(joining, group_id="x")
    refused = az.check(READER, ApiKey.JOIN_GROUP, 5, joining).respond_now
    assert refused == JoinGroupResponse(
        error_code=GROUP_DENIED, generation_id=-1, protocol_name="", leader="", member_id="m-1"
    )
    encodes(ApiKey.JOIN_GROUP, 5, refused)
    v = az.check(READER, ApiKey.FIND_COORDINATOR, 2, FindCoordinatorRequest("other", 0))
    assert v.respond_now.error_code == GROUP_DENIED
    encodes(ApiKey.FIND_COORDINATOR, 2, v.respond_now)
    found = az.check(READER, ApiKey.FIND_COORDINATOR, 2, FindCoordinatorRequest(key="app"))
    assert found.respond_now is None
    # v4+ asks for several keys: the denied ones are answered per key, the others looked up.
    request = FindCoordinatorRequest(key_type=0, coordinator_keys=["app", "other"])
    v = az.check(READER, ApiKey.FIND_COORDINATOR, 4, request)
    assert v.respond_now is None and v.body.coordinator_keys == ["app"]
    answer = [FindCoordinatorResponseCoordinator(key="app", error_code=0)]
    out = v.finish(FindCoordinatorResponse(coordinators=answer))
    assert [(c.key, c.error_code) for c in out.coordinators] == [
        ("app", 0),
        ("other", GROUP_DENIED),
    ]
    encodes(ApiKey.FIND_COORDINATOR, 4, out)
    commit = OffsetCommitRequest(
        group_id="app",
        topics=[
            OffsetCommitRequestTopic(
                name="readable",
                partitions=[OffsetCommitRequestPartition(partition_index=0, committed_offset=1)],
            ),
            OffsetCommitRequestTopic(
                name="secret",
                partitions=[OffsetCommitRequestPartition(partition_index=3, committed_offset=1)],
            ),
        ],
    )
    v = az.check(READER, ApiKey.OFFSET_COMMIT, 7, commit)
    assert [t.name for t in v.body.topics] == ["readable"] and v.body.group_id == "app"
    out = v.finish(OffsetCommitResponse())
    assert out.topics[0].partitions == [
        OffsetCommitResponsePartition(partition_index=3, error_code=TOPIC_DENIED)
    ]
    encodes(ApiKey.OFFSET_COMMIT, 7, out)
    v = az.check(READER, ApiKey.OFFSET_COMMIT, 7, dataclasses.replace(commit, group_id="other"))
    assert [(t.name, [p.error_code for p in t.partitions]) for t in v.respond_now.topics] == [
        ("readable", [GROUP_DENIED]),
        ("secret", [GROUP_DENIED]),
    ]
    encodes(ApiKey.OFFSET_COMMIT, 7, v.respond_now)
    # OffsetFetch: v2+ has a top-level error, v1 answers per partition.
    listed = [OffsetFetchRequestTopic(name="readable", partition_indexes=[0, 1])]
    fetch = OffsetFetchRequest(group_id="other", topics=listed)
    v5 = az.check(READER, ApiKey.OFFSET_FETCH, 5, fetch).respond_now
    assert (v5.error_code, v5.topics) == (GROUP_DENIED, [])
    encodes(ApiKey.OFFSET_FETCH, 5, v5)
    v1 = az.check(READER, ApiKey.OFFSET_FETCH, 1, fetch).respond_now
    assert [p.error_code for p in v1.topics[0].partitions] == [GROUP_DENIED] * 2
    refused = v1.topics[0].partitions
    assert [(p.partition_index, p.committed_offset, p.metadata) for p in refused] == [
        (0, -1, ""),
        (1, -1, ""),
    ]
    encodes(ApiKey.OFFSET_FETCH, 1, v1)
    every = OffsetFetchRequest(group_id="app", topics=None)
    v = az.check(READER, ApiKey.OFFSET_FETCH, 5, every)
    answer = [OffsetFetchResponseTopic(name="readable"), OffsetFetchResponseTopic(name="secret")]
    out = v.finish(OffsetFetchResponse(topics=answer))
    assert [t.name for t in out.topics] == ["readable"]
    # Listed topics: the undescribable one is answered TOPIC_AUTHORIZATION_FAILED.
    both = [
        OffsetFetchRequestTopic(name="readable", partition_indexes=[0]),
        OffsetFetchRequestTopic(name="secret", partition_indexes=[2]),
    ]
    v = az.check(READER, ApiKey.OFFSET_FETCH, 5, OffsetFetchRequest(group_id="app", topics=both))
    assert [t.name for t in v.body.topics] == ["readable"] and v.denied == {T: 1}
    out = v.finish(OffsetFetchResponse(topics=[OffsetFetchResponseTopic(name="readable")]))
    assert [(t.name, [p.error_code for p in t.partitions]) for t in out.topics] == [
        ("readable", []),
        ("secret", [TOPIC_DENIED]),
    ]
    encodes(ApiKey.OFFSET_FETCH, 5, out)
    # v8: several groups, each authorized (and its listed topics) on its own.
    groups = OffsetFetchRequest(
        groups=[
            OffsetFetchRequestGroup(
                group_id="app",
                topics=[
                    OffsetFetchRequestGroupTopic(name="readable", partition_indexes=[0]),
                    OffsetFetchRequestGroupTopic(name="secret", partition_indexes=[2]),
                ],
            ),
            OffsetFetchRequestGroup(group_id="other", topics=None),
            OffsetFetchRequestGroup(group_id="app", topics=None),
        ]
    )
    v = az.check(READER, ApiKey.OFFSET_FETCH, 8, groups)
    assert v.respond_now is None
    assert [g.group_id for g in v.body.groups] == ["app", "app"]
    assert [t.name for t in v.body.groups[0].topics] == ["readable"]
    assert len(groups.groups[0].topics) == 2  # narrowed as a copy
    answered = OffsetFetchResponse(
        groups=[
            OffsetFetchResponseGroup(
                group_id="app", topics=[OffsetFetchResponseGroupTopic(name="readable")]
            ),
            OffsetFetchResponseGroup(
                group_id="app", topics=[OffsetFetchResponseGroupTopic(name="secret")]
            ),
        ]
    )
    out = v.finish(answered)
    first, second, other = out.groups
    assert [t.name for t in first.topics] == ["readable", "secret"]
    assert first.topics[1].partitions[0].error_code == TOPIC_DENIED
    assert second.topics == []  # all topics asked: the undescribable one is left out
    assert (other.group_id, other.error_code) == ("other", GROUP_DENIED)
    encodes(ApiKey.OFFSET_FETCH, 8, out)


def test_describe_groups_and_list_groups() -> None:
    az = authz()
    v = az.check(READER, ApiKey.DESCRIBE_GROUPS, 4, DescribeGroupsRequest(groups=["app", "other"]))
    assert v.body.groups == ["app"]
    out = v.finish(DescribeGroupsResponse(groups=[DescribeGroupsResponseGroup(group_id="app")]))
    assert [(g.group_id, g.error_code) for g in out.groups] == [
        ("app", 0),
        ("other", GROUP_DENIED),
    ]
    v = az.check(READER, ApiKey.LIST_GROUPS, 2, ListGroupsRequest())
    listed = [ListGroupsResponseGroup(group_id="app"), ListGroupsResponseGroup(group_id="other")]
    out = v.finish(ListGroupsResponse(error_code=0, groups=listed))
    assert out.groups == [ListGroupsResponseGroup(group_id="app")]


def test_super_user_and_unlisted_apis_pass() -> None:
    admin = Session(KafkaPrincipal("User", "admin"), "1.2.3.4")
    body = {"topic_data": [{"name": "secret", "partition_data": []}]}
    v = authz().check(admin, ApiKey.PRODUCE, 7, body)
    assert v.body is body and v.finish is None and v.respond_now is None
    assert authz().check(READER, ApiKey.API_VERSIONS, 2, {}).finish is None
    # An API without a rule is not served (the connection answers UNSUPPORTED_VERSION).
    assert authz().check(READER, ApiKey.CREATE_ACLS, 1, body).body is body


def test_transactional_apis_need_write_on_the_transactional_id() -> None:
    X = ResourceType.TRANSACTIONAL_ID
    TXN_DENIED = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    bindings = [*BINDINGS, acl(X, "mine", Op.WRITE)]
    a = authz(bindings)
    add = AddPartitionsToTxnRequest(
        v3_and_below_transactional_id="mine",
        v3_and_below_producer_id=1,
        v3_and_below_producer_epoch=0,
        v3_and_below_topics=[
            AddPartitionsToTxnRequestTopic(name="writable", partitions=[0, 1]),
            AddPartitionsToTxnRequestTopic(name="secret", partitions=[0]),
        ],
    )
    v = a.check(READER, ApiKey.ADD_PARTITIONS_TO_TXN, 2, add)
    codes = {
        (t.name, p.partition_index): p.partition_error_code
        for t in v.respond_now.results_by_topic_v3_and_below
        for p in t.results_by_partition
    }
    assert codes == {
        ("writable", 0): ErrorCode.OPERATION_NOT_ATTEMPTED,
        ("writable", 1): ErrorCode.OPERATION_NOT_ATTEMPTED,
        ("secret", 0): TOPIC_DENIED,
    }
    encodes(ApiKey.ADD_PARTITIONS_TO_TXN, 2, v.respond_now)
    add = dataclasses.replace(add, v3_and_below_topics=add.v3_and_below_topics[:1])
    assert a.check(READER, ApiKey.ADD_PARTITIONS_TO_TXN, 2, add).respond_now is None
    add = dataclasses.replace(add, v3_and_below_transactional_id="theirs")
    v = a.check(READER, ApiKey.ADD_PARTITIONS_TO_TXN, 2, add)
    assert {
        p.partition_error_code
        for t in v.respond_now.results_by_topic_v3_and_below
        for p in t.results_by_partition
    } == {TXN_DENIED}
    end = EndTxnRequest(transactional_id="theirs", producer_id=1, producer_epoch=0, committed=True)
    v = a.check(READER, ApiKey.END_TXN, 2, end)
    assert v.respond_now.error_code == TXN_DENIED
    encodes(ApiKey.END_TXN, 2, v.respond_now)
    mine = dataclasses.replace(end, transactional_id="mine")
    assert a.check(READER, ApiKey.END_TXN, 2, mine).respond_now is None
    offsets = {"transactional_id": "mine", "producer_id": 1, "producer_epoch": 0}
    other = AddOffsetsToTxnRequest(**offsets, group_id="other")
    v = a.check(READER, ApiKey.ADD_OFFSETS_TO_TXN, 2, other)
    assert v.respond_now.error_code == GROUP_DENIED
    encodes(ApiKey.ADD_OFFSETS_TO_TXN, 2, v.respond_now)
    app = AddOffsetsToTxnRequest(**offsets, group_id="app")
    assert a.check(READER, ApiKey.ADD_OFFSETS_TO_TXN, 2, app).respond_now is None
    theirs = dataclasses.replace(app, transactional_id="theirs")
    assert a.check(READER, ApiKey.ADD_OFFSETS_TO_TXN, 2, theirs).respond_now.error_code == (
        TXN_DENIED
    )
    commit = TxnOffsetCommitRequest(
        **offsets,
        group_id="app",
        topics=[
            TxnOffsetCommitRequestTopic(
                name=name,
                partitions=[
                    TxnOffsetCommitRequestPartition(
                        partition_index=0, committed_offset=5, committed_metadata=None
                    )
                ],
            )
            for name in ("readable", "secret")
        ],
    )
    v = a.check(READER, ApiKey.TXN_OFFSET_COMMIT, 2, commit)
    assert [t.name for t in v.body.topics] == ["readable"]
    assert [t.name for t in commit.topics] == ["readable", "secret"]  # not mutated
    merged = v.finish(TxnOffsetCommitResponse(throttle_time_ms=0, topics=[]))
    assert [(t.name, t.partitions[0].error_code) for t in merged.topics] == [
        ("secret", TOPIC_DENIED)
    ]
    encodes(ApiKey.TXN_OFFSET_COMMIT, 2, merged)
    # The transactional id, then the group, refused: every partition answered so.
    theirs = dataclasses.replace(commit, transactional_id="theirs")
    v = a.check(READER, ApiKey.TXN_OFFSET_COMMIT, 2, theirs)
    assert {p.error_code for t in v.respond_now.topics for p in t.partitions} == {TXN_DENIED}
    encodes(ApiKey.TXN_OFFSET_COMMIT, 2, v.respond_now)
    other = dataclasses.replace(commit, group_id="other")
    v = a.check(READER, ApiKey.TXN_OFFSET_COMMIT, 2, other)
    assert {p.error_code for t in v.respond_now.topics for p in t.partitions} == {GROUP_DENIED}
    markers = WriteTxnMarkersRequest(
        markers=[
            WriteTxnMarkersRequestMarker(
                producer_id=1,
                producer_epoch=0,
                transaction_result=False,
                topics=[WriteTxnMarkersRequestTopic(name="writable", partition_indexes=[0])],
                coordinator_epoch=0,
            )
        ]
    )
    v = a.check(READER, ApiKey.WRITE_TXN_MARKERS, 0, markers)
    assert v.respond_now.markers[0].topics[0].partitions[0].error_code == CLUSTER_DENIED
    encodes(ApiKey.WRITE_TXN_MARKERS, 0, v.respond_now)


def test_transaction_tools_see_only_what_the_principal_may_describe_or_read() -> None:
    X = ResourceType.TRANSACTIONAL_ID
    TXN_DENIED = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    a = authz([*BINDINGS, acl(X, "mine", Op.DESCRIBE)])
    request = DescribeTransactionsRequest(transactional_ids=["mine", "theirs"])
    v = a.check(READER, ApiKey.DESCRIBE_TRANSACTIONS, 0, request)
    assert v.body == DescribeTransactionsRequest(transactional_ids=["mine"])
    assert request.transactional_ids == ["mine", "theirs"]  # not mutated
    handler = DescribeTransactionsResponse(
        throttle_time_ms=0,
        transaction_states=[
            DescribeTransactionsResponseTransactionState(
                error_code=0, transactional_id="mine", transaction_state="Ongoing"
            )
        ],
    )
    merged = v.finish(handler)
    assert [(s.transactional_id, s.error_code) for s in merged.transaction_states] == [
        ("mine", 0),
        ("theirs", TXN_DENIED),
    ]
    encodes(ApiKey.DESCRIBE_TRANSACTIONS, 0, merged)

    v = a.check(READER, ApiKey.LIST_TRANSACTIONS, 1, ListTransactionsRequest(state_filters=[]))
    listed = v.finish(
        ListTransactionsResponse(
            error_code=0,
            transaction_states=[
                ListTransactionsResponseTransactionState(
                    transactional_id=t, producer_id=1, transaction_state="Empty"
                )
                for t in ("mine", "theirs")
            ],
        )
    )
    assert [t.transactional_id for t in listed.transaction_states] == ["mine"]
    encodes(ApiKey.LIST_TRANSACTIONS, 1, listed)

    body = DescribeProducersRequest(
        topics=[
            DescribeProducersRequestTopic(name="readable", partition_indexes=[0]),
            DescribeProducersRequestTopic(name="secret", partition_indexes=[0, 1]),
        ]
    )
    v = a.check(READER, ApiKey.DESCRIBE_PRODUCERS, 0, body)
    assert [t.name for t in v.body.topics] == ["readable"]
    assert [t.name for t in body.topics] == ["readable", "secret"]  # not mutated
    merged = v.finish(
        DescribeProducersResponse(topics=[DescribeProducersResponseTopic(name="readable")])
    )
    assert [
        (t.name, p.partition_index, p.error_code) for t in merged.topics for p in t.partitions
    ] == [("secret", 0, TOPIC_DENIED), ("secret", 1, TOPIC_DENIED)]
    encodes(ApiKey.DESCRIBE_PRODUCERS, 0, merged)


def test_add_partitions_to_txn_v4_is_for_brokers_only() -> None:
    body = AddPartitionsToTxnRequest(
        transactions=[
            AddPartitionsToTxnRequestTransaction(
                transactional_id="mine",
                producer_id=1,
                producer_epoch=0,
                verify_only=True,
                topics=[AddPartitionsToTxnRequestTopic(name="writable", partitions=[0])],
            )
        ]
    )
    v = authz().check(READER, ApiKey.ADD_PARTITIONS_TO_TXN, 4, body)
    assert v.respond_now is not None and v.respond_now.error_code == CLUSTER_DENIED
    encodes(ApiKey.ADD_PARTITIONS_TO_TXN, 4, v.respond_now)
    broker = authz([*BINDINGS, acl(C, "kafka-cluster", Op.CLUSTER_ACTION)])
    assert broker.check(READER, ApiKey.ADD_PARTITIONS_TO_TXN, 4, body).respond_now is None


def test_alter_configs_need_alter_configs_on_the_topic_or_cluster() -> None:
    a = authz([*BINDINGS, acl(T, "tunable", Op.ALTER_CONFIGS)])
    set_one = AlterConfigsRequestConfig(name="retention.ms", value="1")
    alter = AlterConfigsRequest(
        resources=[
            AlterConfigsRequestResource(resource_type=2, resource_name=n, configs=[set_one])
            for n in ("tunable", "secret")
        ]
        + [AlterConfigsRequestResource(resource_type=4, resource_name="101", configs=[set_one])],
        validate_only=False,
    )
    op = IncrementalAlterConfigsRequestConfig(name="retention.ms", config_operation=0, value="1")
    incremental = IncrementalAlterConfigsRequest(
        resources=[
            IncrementalAlterConfigsRequestResource(resource_type=2, resource_name=n, configs=[op])
            for n in ("tunable", "secret")
        ]
        + [
            IncrementalAlterConfigsRequestResource(
                resource_type=4, resource_name="101", configs=[op]
            )
        ],
        validate_only=False,
    )
    # The handler's answer for the one resource forwarded.
    answers = [
        AlterConfigsResponse(
            responses=[AlterConfigsResponseResponse(resource_type=2, resource_name="tunable")]
        ),
        IncrementalAlterConfigsResponse(
            responses=[
                IncrementalAlterConfigsResponseResponse(resource_type=2, resource_name="tunable")
            ]
        ),
    ]
    for (api, version, body), answer in zip(
        [(ApiKey.ALTER_CONFIGS, 1, alter), (ApiKey.INCREMENTAL_ALTER_CONFIGS, 0, incremental)],
        answers,
        strict=True,
    ):
        v = a.check(READER, api, version, body)
        assert [r.resource_name for r in v.body.resources] == ["tunable"]
        merged = v.finish(answer)
        assert [(r.resource_name, r.error_code) for r in merged.responses] == [
            ("tunable", 0),
            ("secret", TOPIC_DENIED),
            ("101", CLUSTER_DENIED),
        ]
        encodes(api, version, merged)


def test_authorized_operations_bitfields_follow_the_acls() -> None:
    bindings = [*BINDINGS, acl(C, "kafka-cluster", Op.DESCRIBE), acl(C, "kafka-cluster", Op.ALTER)]
    az = authz(bindings)
    asked = DescribeClusterRequest(include_cluster_authorized_operations=True)
    v = az.check(READER, ApiKey.DESCRIBE_CLUSTER, 1, asked)
    out = v.finish(DescribeClusterResponse(cluster_authorized_operations=-1))
    assert out.cluster_authorized_operations == (1 << Op.DESCRIBE) | (1 << Op.ALTER)
    # Without Describe on the cluster: none (Kafka's rule).
    v = authz().check(READER, ApiKey.DESCRIBE_CLUSTER, 0, asked)
    assert v.finish(DescribeClusterResponse()).cluster_authorized_operations == 0
    body = {
        "topics": [{"name": "readable"}],
        "include_cluster_authorized_operations": True,
        "include_topic_authorized_operations": True,
    }
    v = az.check(READER, ApiKey.METADATA, 9, body)
    out = v.finish(
        {"topics": [{"error_code": 0, "name": "readable", "partitions": [], "is_internal": False}]}
    )
    # Read implies Describe (Kafka's implied operations).
    assert out["topics"][0]["topic_authorized_operations"] == (1 << Op.READ) | (1 << Op.DESCRIBE)
    assert out["cluster_authorized_operations"] == (1 << Op.DESCRIBE) | (1 << Op.ALTER)


def test_describe_log_dirs_and_elect_leaders_need_the_cluster() -> None:
    every_dir = DescribeLogDirsRequest(topics=None)
    v = authz().check(READER, ApiKey.DESCRIBE_LOG_DIRS, 4, every_dir)
    assert v.respond_now is not None and v.respond_now.error_code == CLUSTER_DENIED
    encodes(ApiKey.DESCRIBE_LOG_DIRS, 4, v.respond_now)
    v = authz().check(READER, ApiKey.DESCRIBE_LOG_DIRS, 1, every_dir)
    assert v.respond_now == DescribeLogDirsResponse(throttle_time_ms=0, error_code=0, results=[])
    body = ElectLeadersRequest(
        election_type=0,
        topic_partitions=[ElectLeadersRequestTopicPartition(topic="t", partitions=[0, 1])],
    )
    v = authz().check(READER, ApiKey.ELECT_LEADERS, 2, body)
    assert v.respond_now is not None
    results = v.respond_now.replica_election_results[0].partition_result
    assert [r.error_code for r in results] == [CLUSTER_DENIED, CLUSTER_DENIED]
    encodes(ApiKey.ELECT_LEADERS, 2, v.respond_now)
    admin = Session(KafkaPrincipal("User", "admin"), "127.0.0.1")
    assert authz().check(admin, ApiKey.ELECT_LEADERS, 2, body).respond_now is None


def test_offset_delete_and_delete_groups_need_delete_on_the_group() -> None:
    bindings = [*BINDINGS, acl(G, "app", Op.DELETE)]
    body = OffsetDeleteRequest(
        group_id="app",
        topics=[
            OffsetDeleteRequestTopic(
                name="readable", partitions=[OffsetDeleteRequestPartition(partition_index=0)]
            ),
            OffsetDeleteRequestTopic(
                name="secret", partitions=[OffsetDeleteRequestPartition(partition_index=1)]
            ),
        ],
    )
    v = authz(bindings).check(READER, ApiKey.OFFSET_DELETE, 0, body)
    assert [t.name for t in v.body.topics] == ["readable"] and v.body.group_id == "app"
    out = v.finish(OffsetDeleteResponse(error_code=0, throttle_time_ms=0))
    assert out.topics == [
        OffsetDeleteResponseTopic(
            name="secret",
            partitions=[OffsetDeleteResponsePartition(partition_index=1, error_code=TOPIC_DENIED)],
        )
    ]
    encodes(ApiKey.OFFSET_DELETE, 0, out)
    v = authz().check(READER, ApiKey.OFFSET_DELETE, 0, body)
    assert v.respond_now == OffsetDeleteResponse(error_code=GROUP_DENIED)
    encodes(ApiKey.OFFSET_DELETE, 0, v.respond_now)
    request = DeleteGroupsRequest(groups_names=["app", "x"])
    v = authz(bindings).check(READER, ApiKey.DELETE_GROUPS, 2, request)
    assert v.body.groups_names == ["app"]
    out = v.finish(DeleteGroupsResponse(results=[DeleteGroupsResponseResult("app", 0)]))
    assert out.results[1] == DeleteGroupsResponseResult(group_id="x", error_code=GROUP_DENIED)


def test_describe_topic_partitions_hides_or_refuses_undescribable_topics() -> None:
    def answer() -> DescribeTopicPartitionsResponse:
        return DescribeTopicPartitionsResponse(
            topics=[
                DescribeTopicPartitionsResponseTopic(
                    error_code=0,
                    name=name,
                    topic_id=bytes(16),
                    partitions=[DescribeTopicPartitionsResponsePartition()],
                )
                for name in ("readable", "secret")
            ],
            next_cursor=None,
        )

    one = DescribeTopicPartitionsRequest(
        topics=[DescribeTopicPartitionsRequestTopic(name="readable")]
    )
    listed = authz().check(READER, ApiKey.DESCRIBE_TOPIC_PARTITIONS, 0, one)
    out = listed.finish(answer())
    assert [(t.name, t.error_code) for t in out.topics] == [
        ("readable", 0),
        ("secret", TOPIC_DENIED),
    ]
    assert out.topics[1].partitions == []
    assert out.topics[0].topic_authorized_operations == (1 << Op.READ) | (1 << Op.DESCRIBE)
    encodes(ApiKey.DESCRIBE_TOPIC_PARTITIONS, 0, out)
    every = authz().check(
        READER, ApiKey.DESCRIBE_TOPIC_PARTITIONS, 0, DescribeTopicPartitionsRequest(topics=[])
    )
    out = every.finish(answer())
    assert [t.name for t in out.topics] == ["readable"]


def test_a_rule_looking_up_an_undeclared_acl_fails_the_check(monkeypatch) -> None:
    undeclared = dataclasses.replace(HANDLERS[ApiKey.PRODUCE], acls=((Op.WRITE, T),))
    monkeypatch.setitem(HANDLERS, ApiKey.PRODUCE, undeclared)
    body = {"transactional_id": "t", "topic_data": []}
    with pytest.raises(UndeclaredAclError, match="PRODUCE checks WRITE on TRANSACTIONAL_ID"):
        authz().check(READER, ApiKey.PRODUCE, 7, body)


def test_list_offsets_and_offset_for_leader_epoch_need_describe_or_cluster_action() -> None:
    body = ListOffsetsRequest(
        replica_id=-1,
        topics=[
            ListOffsetsRequestTopic(
                name="readable",
                partitions=[ListOffsetsRequestPartition(partition_index=0, timestamp=-1)],
            ),
            ListOffsetsRequestTopic(
                name="secret",
                partitions=[ListOffsetsRequestPartition(partition_index=1, timestamp=-1)],
            ),
        ],
    )
    v = authz().check(READER, ApiKey.LIST_OFFSETS, 5, body)
    assert [t.name for t in v.body.topics] == ["readable"]
    assert [t.name for t in body.topics] == ["readable", "secret"]  # narrowed as a copy
    out = v.finish(ListOffsetsResponse(throttle_time_ms=0))
    assert out.topics == [
        ListOffsetsResponseTopic(
            name="secret",
            partitions=[
                ListOffsetsResponsePartition(
                    partition_index=1, error_code=TOPIC_DENIED, timestamp=-1, offset=-1
                )
            ],
        )
    ]
    assert v.denied == {T: 1}
    encodes(ApiKey.LIST_OFFSETS, 5, out)
    epochs = OffsetForLeaderEpochRequest(
        replica_id=-1,
        topics=[
            OffsetForLeaderEpochRequestTopic(
                topic="readable",
                partitions=[OffsetForLeaderEpochRequestPartition(partition=0, leader_epoch=1)],
            ),
            OffsetForLeaderEpochRequestTopic(
                topic="secret",
                partitions=[OffsetForLeaderEpochRequestPartition(partition=2, leader_epoch=1)],
            ),
        ],
    )
    v = authz().check(READER, ApiKey.OFFSET_FOR_LEADER_EPOCH, 3, epochs)
    assert [t.topic for t in v.body.topics] == ["readable"]
    out = v.finish(OffsetForLeaderEpochResponse(throttle_time_ms=0))
    assert out.topics[0].partitions == [
        OffsetForLeaderEpochResponsePartition(
            partition=2, error_code=TOPIC_DENIED, leader_epoch=-1, end_offset=-1
        )
    ]
    encodes(ApiKey.OFFSET_FOR_LEADER_EPOCH, 3, out)
    # A follower (replica_id >= 0) needs ClusterAction: every partition is refused without it.
    follower = dataclasses.replace(epochs, replica_id=2)
    v = authz().check(READER, ApiKey.OFFSET_FOR_LEADER_EPOCH, 3, follower)
    assert v.body.topics == [] and v.denied == {T: 2}
    assert len(follower.topics) == 2  # narrowed as a copy
    out = v.finish(OffsetForLeaderEpochResponse(throttle_time_ms=0))
    assert {p.error_code for t in out.topics for p in t.partitions} == {CLUSTER_DENIED}
    # v0-2 carry no replica_id: a consumer's request, checked per topic.
    v = authz().check(READER, ApiKey.OFFSET_FOR_LEADER_EPOCH, 2, OffsetForLeaderEpochRequest())
    assert v.respond_now is None and v.denied is None


def test_delete_records_and_create_partitions_need_delete_and_alter_on_the_topic() -> None:
    bindings = [*BINDINGS, acl(T, "readable", Op.DELETE), acl(T, "readable", Op.ALTER)]
    records = DeleteRecordsRequest(
        topics=[
            DeleteRecordsRequestTopic(
                name="readable",
                partitions=[DeleteRecordsRequestPartition(partition_index=0, offset=1)],
            ),
            DeleteRecordsRequestTopic(
                name="secret",
                partitions=[DeleteRecordsRequestPartition(partition_index=4, offset=1)],
            ),
        ],
        timeout_ms=1000,
    )
    v = authz(bindings).check(READER, ApiKey.DELETE_RECORDS, 1, records)
    assert [t.name for t in v.body.topics] == ["readable"]
    assert v.body.timeout_ms == 1000
    out = v.finish(DeleteRecordsResponse(throttle_time_ms=0))
    assert out.topics == [
        DeleteRecordsResponseTopic(
            name="secret",
            partitions=[
                DeleteRecordsResponsePartition(
                    partition_index=4, low_watermark=-1, error_code=TOPIC_DENIED
                )
            ],
        )
    ]
    encodes(ApiKey.DELETE_RECORDS, 1, out)
    grow = CreatePartitionsRequest(
        topics=[
            CreatePartitionsRequestTopic(name="readable", count=3, assignments=None),
            CreatePartitionsRequestTopic(name="secret", count=3, assignments=None),
        ],
        timeout_ms=1000,
        validate_only=False,
    )
    v = authz(bindings).check(READER, ApiKey.CREATE_PARTITIONS, 1, grow)
    assert [t.name for t in v.body.topics] == ["readable"]
    out = v.finish(CreatePartitionsResponse(throttle_time_ms=0))
    assert [(r.name, r.error_code) for r in out.results] == [("secret", TOPIC_DENIED)]
    encodes(ApiKey.CREATE_PARTITIONS, 1, out)


def test_cluster_apis_are_refused_whole_without_the_cluster_operation() -> None:
    admin = Session(KafkaPrincipal("User", "admin"), "1.2.3.4")
    quorum = DescribeQuorumRequest(
        topics=[
            DescribeQuorumRequestTopic(
                topic_name="__cluster_metadata",
                partitions=[DescribeQuorumRequestPartition(partition_index=0)],
            )
        ]
    )
    v = authz().check(READER, ApiKey.DESCRIBE_QUORUM, 1, quorum)
    assert v.respond_now.error_code == CLUSTER_DENIED and v.denied == {C: 1}
    encodes(ApiKey.DESCRIBE_QUORUM, 1, v.respond_now)
    v = authz().check(READER, ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, {"users": None})
    assert v.respond_now["error_code"] == CLUSTER_DENIED
    encodes(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, v.respond_now)
    scram = {
        "deletions": [{"name": "alice", "mechanism": 1}],
        "upsertions": [
            {
                "name": "alice",
                "mechanism": 2,
                "iterations": 4096,
                "salt": b"s",
                "salted_password": b"p",
            },
            {
                "name": "bob",
                "mechanism": 2,
                "iterations": 4096,
                "salt": b"s",
                "salted_password": b"p",
            },
        ],
    }
    v = authz().check(READER, ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, scram)
    assert [(r["user"], r["error_code"]) for r in v.respond_now["results"]] == [
        ("alice", CLUSTER_DENIED),
        ("bob", CLUSTER_DENIED),
    ]
    encodes(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, v.respond_now)
    features = UpdateFeaturesRequest(
        timeout_ms=1000,
        feature_updates=[
            UpdateFeaturesRequestFeatureUpdate(
                feature="metadata.version", max_version_level=21, upgrade_type=1
            )
        ],
        validate_only=False,
    )
    v = authz().check(READER, ApiKey.UPDATE_FEATURES, 1, features)
    assert v.respond_now.error_code == CLUSTER_DENIED
    assert v.respond_now.results[0].error_code == CLUSTER_DENIED
    encodes(ApiKey.UPDATE_FEATURES, 1, v.respond_now)
    for api, version, body in [
        (ApiKey.DESCRIBE_QUORUM, 1, quorum),
        (ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, {"users": None}),
        (ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, scram),
        (ApiKey.UPDATE_FEATURES, 1, features),
    ]:
        assert authz().check(admin, api, version, body).respond_now is None, api


def test_group_members_need_read_on_the_group() -> None:
    sync = SyncGroupRequest(group_id="other", generation_id=1, member_id="m", assignments=[])
    v = authz().check(READER, ApiKey.SYNC_GROUP, 3, sync)
    assert v.respond_now.error_code == GROUP_DENIED and v.denied == {G: 1}
    encodes(ApiKey.SYNC_GROUP, 3, v.respond_now)
    leave = LeaveGroupRequest(
        group_id="other", members=[LeaveGroupRequestMember(member_id="m", group_instance_id=None)]
    )
    v = authz().check(READER, ApiKey.LEAVE_GROUP, 3, leave)
    assert v.respond_now.error_code == GROUP_DENIED and v.respond_now.members == []
    encodes(ApiKey.LEAVE_GROUP, 3, v.respond_now)
    allowed_sync = dataclasses.replace(sync, group_id="app")
    assert authz().check(READER, ApiKey.SYNC_GROUP, 3, allowed_sync).finish is None
    allowed_leave = dataclasses.replace(leave, group_id="app")
    assert authz().check(READER, ApiKey.LEAVE_GROUP, 3, allowed_leave).respond_now is None


def test_consumer_group_apis_need_read_or_describe_on_the_group() -> None:
    heartbeat = ConsumerGroupHeartbeatRequest(group_id="other", member_id="m", member_epoch=0)
    v = authz().check(READER, ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, heartbeat)
    assert v.respond_now == ConsumerGroupHeartbeatResponse(
        error_code=GROUP_DENIED, member_id=None, member_epoch=-1, assignment=None
    )
    encodes(ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, v.respond_now)
    allowed = dataclasses.replace(heartbeat, group_id="app")
    ok = authz().check(READER, ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, allowed)
    assert ok.respond_now is None
    body = ConsumerGroupDescribeRequest(
        group_ids=["app", "other"], include_authorized_operations=False
    )
    v = authz().check(READER, ApiKey.CONSUMER_GROUP_DESCRIBE, 0, body)
    assert v.body.group_ids == ["app"] and v.denied == {G: 1}
    assert body.group_ids == ["app", "other"]  # narrowed in a copy
    out = v.finish(ConsumerGroupDescribeResponse(throttle_time_ms=0, groups=[]))
    assert [(g.group_id, g.error_code) for g in out.groups] == [("other", GROUP_DENIED)]
    encodes(ApiKey.CONSUMER_GROUP_DESCRIBE, 0, out)
