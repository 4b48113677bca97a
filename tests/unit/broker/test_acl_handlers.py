"""The ACL APIs' handlers (DescribeAcls, CreateAcls, DeleteAcls) on a KafkaApis whose controller
is a real ControllerServer over an in-memory metadata log; the broker's image follows the
controller's, as a broker's metadata follower would make it. Their authorization rules against
an Authorizer with ACLs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from common.error_codes import ErrorCode
from common.protocol.codec import RequestHeader
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
from data_plane.broker.apis import KafkaApis, Request
from data_plane.broker.handlers import create_acls, delete_acls, describe_acls
from data_plane.security.request_authz import RequestAuthorizer, Session
from metadata.service import ControllerServer
from tests.unit.broker.forwarding_harness import (
    active_controller,
    forwarding_apis,
    run_following,
)

TOPIC, LITERAL, PREFIXED = ResourceType.TOPIC, PatternType.LITERAL, PatternType.PREFIXED
READ, WRITE = AclOperation.READ, AclOperation.WRITE
ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY
ANY = 1


@pytest.fixture
def controller() -> Iterator[ControllerServer]:
    with active_controller() as server:
        yield server


@pytest.fixture
def apis(controller: ControllerServer, tmp_path: Path) -> Iterator[KafkaApis]:
    with forwarding_apis(controller, tmp_path) as apis:
        apis.authorizer_enabled = True
        yield apis


def call(apis: KafkaApis, controller: ControllerServer, module: Any, body: dict[str, Any]) -> Any:
    """Run ``module``'s handler while the broker's image follows the controller's."""
    request = Request(RequestHeader(29, 3, 1, "t"), body, "PLAINTEXT")
    return run_following(apis, controller, module, request)


def creation(name: str, op: AclOperation, perm: AclPermissionType, **kw: Any) -> dict[str, Any]:
    return {
        "resource_type": int(TOPIC),
        "resource_name": name,
        "resource_pattern_type": int(kw.get("pattern", LITERAL)),
        "principal": kw.get("principal", "User:alice"),
        "host": "*",
        "operation": int(op),
        "permission_type": int(perm),
    }


def describe_filter(**kw: Any) -> dict[str, Any]:
    return {
        "resource_type_filter": kw.get("resource_type", ANY),
        "resource_name_filter": kw.get("name"),
        "pattern_type_filter": kw.get("pattern", ANY),
        "principal_filter": kw.get("principal"),
        "host_filter": None,
        "operation": kw.get("operation", ANY),
        "permission_type": ANY,
    }


def test_create_describe_delete(apis: KafkaApis, controller: ControllerServer) -> None:
    created = call(
        apis,
        controller,
        create_acls,
        {
            "creations": [
                creation("orders", READ, ALLOW),
                creation("orders", WRITE, ALLOW),
                creation("logs-", WRITE, DENY, pattern=PREFIXED, principal="User:bob"),
                creation("", READ, ALLOW),
            ]
        },
    )
    codes = [r["error_code"] for r in created["results"]]
    assert codes == [0, 0, 0, ErrorCode.INVALID_REQUEST]
    # Answered once this broker's image holds the new bindings: a describe sees them at once.
    described = call(apis, controller, describe_acls, describe_filter())
    assert described["error_code"] == 0
    by_resource = {(r["resource_name"], r["pattern_type"]): r for r in described["resources"]}
    assert sorted(by_resource) == [("logs-", int(PREFIXED)), ("orders", int(LITERAL))]
    assert sorted(a["operation"] for a in by_resource["orders", int(LITERAL)]["acls"]) == [
        int(READ),
        int(WRITE),
    ]
    # MATCH finds the prefixed binding covering a topic name.
    matched = call(
        apis, controller, describe_acls, describe_filter(name="logs-app", pattern=PatternType.MATCH)
    )
    assert [r["resource_name"] for r in matched["resources"]] == ["logs-"]

    deleted = call(
        apis,
        controller,
        delete_acls,
        {
            "filters": [
                describe_filter(name="orders", pattern=LITERAL, operation=int(READ)),
                describe_filter(name="nothing-here"),
                describe_filter(operation=0),
            ]
        },
    )
    results = deleted["filter_results"]
    assert [r["error_code"] for r in results] == [0, 0, ErrorCode.INVALID_REQUEST]
    assert [(a["resource_name"], a["operation"]) for a in results[0]["matching_acls"]] == [
        ("orders", int(READ))
    ]
    assert results[1]["matching_acls"] == []  # a filter matching nothing is not an error
    left = call(apis, controller, describe_acls, describe_filter(name="orders"))
    assert [a["operation"] for r in left["resources"] for a in r["acls"]] == [int(WRITE)]


def test_unknown_filter_elements_are_invalid_requests(
    apis: KafkaApis, controller: ControllerServer
) -> None:
    for bad in ({"resource_type": 0}, {"resource_type": 99}, {"pattern": 0}, {"operation": 42}):
        answer = call(apis, controller, describe_acls, describe_filter(**bad))
        assert answer["error_code"] == ErrorCode.INVALID_REQUEST, bad
        assert answer["resources"] == []
    bad_creation = creation("t", READ, ALLOW, pattern=PatternType.ANY)
    answer = call(apis, controller, create_acls, {"creations": [bad_creation]})
    assert [r["error_code"] for r in answer["results"]] == [ErrorCode.INVALID_REQUEST]


def test_without_an_authorizer_the_apis_answer_security_disabled(
    apis: KafkaApis, controller: ControllerServer
) -> None:
    apis.authorizer_enabled = False
    answer = call(apis, controller, describe_acls, describe_filter())
    assert answer["error_code"] == ErrorCode.SECURITY_DISABLED
    answer = call(apis, controller, create_acls, {"creations": [creation("t", READ, ALLOW)] * 2})
    assert [r["error_code"] for r in answer["results"]] == [ErrorCode.SECURITY_DISABLED] * 2
    answer = call(apis, controller, delete_acls, {"filters": [describe_filter()]})
    assert [r["error_code"] for r in answer["filter_results"]] == [ErrorCode.SECURITY_DISABLED]
    assert controller.controller.image.security.acls == {}


def _binding(principal: str, op: AclOperation) -> AclBinding:
    return AclBinding(
        ResourcePattern(ResourceType.CLUSTER, "kafka-cluster"),
        AccessControlEntry(principal, "*", op, ALLOW),
    )


def test_rules_need_describe_or_alter_on_the_cluster() -> None:
    authorizer = Authorizer(
        bindings=[
            _binding("User:viewer", AclOperation.DESCRIBE),
            _binding("User:admin", AclOperation.ALTER),
        ]
    )
    authz = RequestAuthorizer(authorizer, lambda _n: True, {})
    viewer = Session(KafkaPrincipal("User", "viewer"), "127.0.0.1")
    admin = Session(KafkaPrincipal("User", "admin"), "127.0.0.1")
    nobody = Session(KafkaPrincipal("User", "nobody"), "127.0.0.1")
    denied = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    body = describe_filter()
    assert describe_acls.authorize(authz, viewer, 3, body).respond_now is None
    # Alter implies Describe, as in Kafka.
    assert describe_acls.authorize(authz, admin, 3, body).respond_now is None
    refused = describe_acls.authorize(authz, nobody, 3, body)
    assert refused.respond_now is not None and refused.respond_now["error_code"] == denied
    assert refused.denied == {ResourceType.CLUSTER: 1}

    creations = {"creations": [creation("t", READ, ALLOW)] * 2}
    assert create_acls.authorize(authz, admin, 3, creations).respond_now is None
    refused = create_acls.authorize(authz, viewer, 3, creations)
    assert refused.respond_now is not None
    assert [r["error_code"] for r in refused.respond_now["results"]] == [denied] * 2

    filters = {"filters": [body]}
    assert delete_acls.authorize(authz, admin, 3, filters).respond_now is None
    refused = delete_acls.authorize(authz, viewer, 3, filters)
    assert refused.respond_now is not None
    assert [r["error_code"] for r in refused.respond_now["filter_results"]] == [denied]
