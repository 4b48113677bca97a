"""The reassignment APIs' handlers (AlterPartitionReassignments, ListPartitionReassignments) on a
KafkaApis whose controller is a real ControllerServer over an in-memory metadata log, with four
registered brokers; requests and responses go through the codec in every version. Their
authorization rules against an Authorizer with ACLs."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from common.error_codes import ErrorCode
from common.protocol import codec
from common.protocol.api_keys import ApiKey
from common.protocol.messages.alter_partition_reassignments import (
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsRequestPartition,
    AlterPartitionReassignmentsRequestTopic,
    AlterPartitionReassignmentsResponse,
)
from common.protocol.messages.list_partition_reassignments import (
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsRequestTopic,
    ListPartitionReassignmentsResponse,
)
from common.security.acl import (
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    Authorizer,
    ResourcePattern,
    ResourceType,
)
from common.security.principal import KafkaPrincipal
from data_plane.broker.apis import KafkaApis, Request
from data_plane.broker.handlers import (
    HANDLERS,
    alter_partition_reassignments,
    list_partition_reassignments,
)
from data_plane.security.request_authz import RequestAuthorizer, Session
from metadata.messages import NewTopic
from metadata.service import ControllerServer
from tests.unit.broker.forwarding_harness import active_controller, forwarding_apis

ALTER, LIST = ApiKey.ALTER_PARTITION_REASSIGNMENTS, ApiKey.LIST_PARTITION_REASSIGNMENTS
T = "moving"


@pytest.fixture
def controller() -> Iterator[ControllerServer]:
    with active_controller() as server:
        yield server


@pytest.fixture
def apis(controller: ControllerServer, tmp_path: Path) -> Iterator[KafkaApis]:
    """A broker's KafkaApis; the controller has brokers 1-4 and topic T (replicas 1, 2, 3)."""
    with forwarding_apis(controller, tmp_path) as apis:
        client = apis.controller
        assert client is not None
        for bid in (1, 2, 3, 4):
            endpoints = {"PLAINTEXT": ("127.0.0.1", 9000 + bid)}
            reg = client.register_broker(bid, f"i{bid}", endpoints)
            assert reg.error_code == 0
            hb = client.broker_heartbeat(bid, reg.broker_epoch, 10**9)
            assert hb.error_code == 0 and not hb.is_fenced
        assignment = {0: [1, 2, 3]}
        (created,) = client.create_topics([NewTopic(T, -1, -1, replica_assignment=assignment)])
        assert created.error_code == 0
        yield apis


def call(apis: KafkaApis, api_key: ApiKey, version: int, body: Any) -> Any:
    """Send ``body`` through the codec at ``version``, run the handler, and decode its answer
    as a client would."""
    frame = codec.encode_request(api_key, version, 7, "t", body)
    header, decoded = codec.decode_request(frame[4:])
    module = alter_partition_reassignments if api_key == ALTER else list_partition_reassignments
    answer = asyncio.run(module.handle(apis, Request(header, decoded, "PLAINTEXT")))
    wire = codec.encode_response(header, answer).to_bytes()
    correlation_id, response = codec.decode_response(api_key, version, wire[4:])
    assert correlation_id == 7
    return response


def alter(
    *topics: tuple[str, list[tuple[int, list[int] | None]]], allow: bool = True
) -> AlterPartitionReassignmentsRequest:
    return AlterPartitionReassignmentsRequest(
        timeout_ms=5000,
        allow_replication_factor_change=allow,
        topics=[
            AlterPartitionReassignmentsRequestTopic(
                name, [AlterPartitionReassignmentsRequestPartition(p, r) for p, r in parts]
            )
            for name, parts in topics
        ],
    )


def answers(response: AlterPartitionReassignmentsResponse) -> list[tuple[str, int, int]]:
    return [
        (t.name, p.partition_index, p.error_code) for t in response.responses for p in t.partitions
    ]


def listed(apis: KafkaApis, topics: list[tuple[str, list[int]]] | None = None) -> list[Any]:
    request = ListPartitionReassignmentsRequest(
        topics=None
        if topics is None
        else [ListPartitionReassignmentsRequestTopic(n, ps) for n, ps in topics]
    )
    response = call(apis, LIST, 0, request)
    assert isinstance(response, ListPartitionReassignmentsResponse)
    assert response.error_code == 0
    return [
        (t.name, p.partition_index, p.replicas, p.adding_replicas, p.removing_replicas)
        for t in response.topics
        for p in t.partitions
    ]


@pytest.mark.parametrize("version", [0, 1])
def test_move_list_and_cancel(apis: KafkaApis, version: int) -> None:
    response = call(apis, ALTER, version, alter((T, [(0, [1, 2, 4])])))
    assert isinstance(response, AlterPartitionReassignmentsResponse)
    assert response.error_code == 0 and response.error_message is None
    assert answers(response) == [(T, 0, 0)]
    # Broker 4 is adding until it joins the ISR, which no follower here ever does.
    moving = (T, 0, [1, 2, 4, 3], [4], [3])
    assert listed(apis) == [moving]
    assert listed(apis, [(T, [0, 5]), ("no-such-topic", [0])]) == [moving]
    assert listed(apis, [(T, [5])]) == []
    # A null target cancels; a second cancel has nothing to cancel.
    response = call(apis, ALTER, version, alter((T, [(0, None)])))
    assert answers(response) == [(T, 0, 0)]
    assert listed(apis) == []
    response = call(apis, ALTER, version, alter((T, [(0, None)])))
    assert answers(response) == [(T, 0, ErrorCode.NO_REASSIGNMENT_IN_PROGRESS)]
    assert response.error_code == 0


def test_refusals_per_partition_in_request_order(apis: KafkaApis) -> None:
    request = alter(
        (T, [(0, [1, 2, 99]), (0, [1, 1, 2]), (0, []), (7, [1, 2, 3])]),
        ("no-such-topic", []),
        ("no-such-topic", [(0, [1, 2, 3])]),
        (T, [(0, [4, 2, 1])]),
    )
    response = call(apis, ALTER, 1, request)
    assert response.error_code == 0
    invalid, unknown = ErrorCode.INVALID_REPLICA_ASSIGNMENT, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    # The request's shape comes back: its topics (an empty one too), each with its partitions;
    # the controller answers the first naming of a partition, INVALID_REQUEST the others.
    assert [(t.name, len(t.partitions)) for t in response.responses] == [
        (T, 4),
        ("no-such-topic", 0),
        ("no-such-topic", 1),
        (T, 1),
    ]
    assert answers(response) == [
        (T, 0, invalid),
        (T, 0, ErrorCode.INVALID_REQUEST),
        (T, 0, ErrorCode.INVALID_REQUEST),
        (T, 7, unknown),
        ("no-such-topic", 0, unknown),
        (T, 0, ErrorCode.INVALID_REQUEST),
    ]
    messages = [p.error_message for t in response.responses for p in t.partitions]
    assert "not registered" in (messages[0] or "")
    assert listed(apis) == []


def test_a_bad_target_alone_is_invalid_replica_assignment(apis: KafkaApis) -> None:
    for target in ([1, 2, 99], [1, 1, 2], []):
        response = call(apis, ALTER, 0, alter((T, [(0, target)])))
        assert answers(response) == [(T, 0, ErrorCode.INVALID_REPLICA_ASSIGNMENT)], target


def test_v1_can_refuse_a_change_of_replication_factor(apis: KafkaApis) -> None:
    response = call(apis, ALTER, 1, alter((T, [(0, [1, 2, 3, 4])]), allow=False))
    assert answers(response) == [(T, 0, ErrorCode.INVALID_REPLICATION_FACTOR)]
    assert response.allow_replication_factor_change is False  # echoed
    assert listed(apis) == []
    response = call(apis, ALTER, 1, alter((T, [(0, [4, 2, 3])]), allow=False))
    assert answers(response) == [(T, 0, 0)]
    response = call(apis, ALTER, 1, alter((T, [(0, [1, 2, 3, 4])])))
    assert answers(response) == [(T, 0, 0)] and response.allow_replication_factor_change
    # v0 cannot carry the flag: the factor may change.
    assert answers(call(apis, ALTER, 0, alter((T, [(0, [1, 2])])))) == [(T, 0, 0)]


def test_without_a_controller_every_partition_gets_the_error(apis: KafkaApis) -> None:
    apis.controller = None
    response = call(apis, ALTER, 1, alter((T, [(0, [1, 2, 4]), (1, None)])))
    assert response.error_code == ErrorCode.NOT_CONTROLLER
    assert answers(response) == [(T, 0, ErrorCode.NOT_CONTROLLER), (T, 1, ErrorCode.NOT_CONTROLLER)]
    response = call(apis, LIST, 0, ListPartitionReassignmentsRequest())
    assert response.error_code == ErrorCode.NOT_CONTROLLER and response.topics == []


def _cluster_acl(principal: str, op: AclOperation) -> AclBinding:
    return AclBinding(
        ResourcePattern(ResourceType.CLUSTER, "kafka-cluster"),
        AccessControlEntry(principal, "*", op, AclPermissionType.ALLOW),
    )


def test_rules_need_alter_or_describe_on_the_cluster() -> None:
    authorizer = Authorizer(
        bindings=[
            _cluster_acl("User:viewer", AclOperation.DESCRIBE),
            _cluster_acl("User:admin", AclOperation.ALTER),
        ]
    )
    authz = RequestAuthorizer(authorizer, lambda _n: True, {})
    viewer = Session(KafkaPrincipal("User", "viewer"), "127.0.0.1")
    admin = Session(KafkaPrincipal("User", "admin"), "127.0.0.1")
    nobody = Session(KafkaPrincipal("User", "nobody"), "127.0.0.1")
    denied = ErrorCode.CLUSTER_AUTHORIZATION_FAILED

    body = alter((T, [(0, [1, 2, 4]), (1, None)]), ("other", [(3, [1])]), allow=False)
    assert alter_partition_reassignments.authorize(authz, admin, 1, body).respond_now is None
    for who in (viewer, nobody):
        refused = alter_partition_reassignments.authorize(authz, who, 1, body)
        answer = refused.respond_now
        assert isinstance(answer, AlterPartitionReassignmentsResponse)
        assert answer.error_code == denied and answer.allow_replication_factor_change is False
        assert answers(answer) == [(T, 0, denied), (T, 1, denied), ("other", 3, denied)]
        assert refused.denied == {ResourceType.CLUSTER: 1}

    request = ListPartitionReassignmentsRequest()
    # Alter implies Describe, as in Kafka.
    for who in (viewer, admin):
        assert list_partition_reassignments.authorize(authz, who, 0, request).respond_now is None
    refused = list_partition_reassignments.authorize(authz, nobody, 0, request)
    assert isinstance(refused.respond_now, ListPartitionReassignmentsResponse)
    assert refused.respond_now.error_code == denied and refused.respond_now.topics == []
    assert refused.denied == {ResourceType.CLUSTER: 1}


def test_registry_serves_them_with_their_acls() -> None:
    alter_api, list_api = HANDLERS[ALTER], HANDLERS[LIST]
    assert alter_api.acls == ((AclOperation.ALTER, ResourceType.CLUSTER),)
    assert list_api.acls == ((AclOperation.DESCRIBE, ResourceType.CLUSTER),)
    assert ALTER in codec.TYPED_APIS and LIST in codec.TYPED_APIS
