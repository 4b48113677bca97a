"""The client quota APIs' handlers (DescribeClientQuotas, AlterClientQuotas) on a KafkaApis
whose controller is a real ControllerServer over an in-memory metadata log; the broker's image
follows the controller's, as a broker's metadata follower would make it. Their authorization
rules against an Authorizer with ACLs."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from common.error_codes import ErrorCode
from common.protocol.codec import RequestHeader
from common.protocol.messages.alter_client_quotas import (
    AlterClientQuotasRequest,
    AlterClientQuotasRequestEntity,
    AlterClientQuotasRequestEntry,
    AlterClientQuotasRequestOp,
    AlterClientQuotasResponse,
)
from common.protocol.messages.describe_client_quotas import (
    DescribeClientQuotasRequest,
    DescribeClientQuotasRequestComponent,
    DescribeClientQuotasResponse,
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
from data_plane.broker.config import BrokerConfig
from data_plane.broker.handlers import alter_client_quotas, describe_client_quotas
from data_plane.broker.replica_manager import ReplicaManager
from data_plane.security.request_authz import RequestAuthorizer, Session
from data_plane.storage import LogConfig, LogManager
from metadata.service import ControllerServer
from tests.unit.broker.forwarding_harness import (
    active_controller,
    forwarding_apis,
    run_following,
)

EXACT, DEFAULT, SPECIFIED = 0, 1, 2
INVALID = ErrorCode.INVALID_REQUEST


@pytest.fixture
def controller() -> Iterator[ControllerServer]:
    with active_controller() as server:
        yield server


@pytest.fixture
def apis(controller: ControllerServer, tmp_path: Path) -> Iterator[KafkaApis]:
    with forwarding_apis(controller, tmp_path) as apis:
        yield apis


def call(apis: KafkaApis, controller: ControllerServer, module: Any, body: Any) -> Any:
    """Run ``module``'s handler while the broker's image follows the controller's."""
    request = Request(RequestHeader(48, 1, 1, "t"), body, "PLAINTEXT")
    return run_following(apis, controller, module, request)


def entry(entity: dict[str, str | None], **ops: float | None) -> AlterClientQuotasRequestEntry:
    """An alteration of ``entity``: each op sets its key, or removes it when None."""
    return AlterClientQuotasRequestEntry(
        entity=[AlterClientQuotasRequestEntity(t, n) for t, n in entity.items()],
        ops=[
            AlterClientQuotasRequestOp(key, value or 0.0, value is None)
            for key, value in ops.items()
        ],
    )


def alter(
    apis: KafkaApis,
    controller: ControllerServer,
    *entries: AlterClientQuotasRequestEntry,
    **kw: Any,
) -> AlterClientQuotasResponse:
    body = AlterClientQuotasRequest(
        entries=list(entries), validate_only=kw.get("validate_only", False)
    )
    answer = call(apis, controller, alter_client_quotas, body)
    assert isinstance(answer, AlterClientQuotasResponse)
    return answer


def describe(
    apis: KafkaApis, *components: tuple[str, int, str | None], strict: bool = False
) -> DescribeClientQuotasResponse:
    body = DescribeClientQuotasRequest(
        components=[DescribeClientQuotasRequestComponent(*c) for c in components], strict=strict
    )
    answer = describe_client_quotas.handle(apis, Request(RequestHeader(48, 1, 1, "t"), body, "P"))
    assert isinstance(answer, DescribeClientQuotasResponse)
    return answer


def entities(answer: DescribeClientQuotasResponse) -> list[dict[str, Any]]:
    assert answer.error_code == ErrorCode.NO_ERROR and answer.entries is not None
    return [
        {
            "entity": {e.entity_type: e.entity_name for e in x.entity},
            "values": {v.key: v.value for v in x.values},
        }
        for x in answer.entries
    ]


def test_alter_then_describe_with_every_match_type(
    apis: KafkaApis, controller: ControllerServer
) -> None:
    answer = alter(
        apis,
        controller,
        entry({"user": "alice"}, producer_byte_rate=1048576.0),
        entry({"user": "alice", "client-id": "app"}, consumer_byte_rate=2e6),
        entry({"user": None}, producer_byte_rate=5e6),
        entry({"client-id": None}, consumer_byte_rate=7e6, request_percentage=50.0),
    )
    assert [e.error_code for e in answer.entries] == [0] * 4
    # The entity is named as the request named it.
    assert [(x.entity_type, x.entity_name) for x in answer.entries[1].entity] == [
        ("user", "alice"),
        ("client-id", "app"),
    ]
    # The answer went out after this broker's image showed the change.
    everything = entities(describe(apis))
    assert everything == [
        {
            "entity": {"client-id": None},
            "values": {"consumer_byte_rate": 7e6, "request_percentage": 50.0},
        },
        {"entity": {"user": None}, "values": {"producer_byte_rate": 5e6}},
        {"entity": {"user": "alice"}, "values": {"producer_byte_rate": 1048576.0}},
        {
            "entity": {"user": "alice", "client-id": "app"},
            "values": {"consumer_byte_rate": 2e6},
        },
    ]
    exact = entities(describe(apis, ("user", EXACT, "alice")))
    assert [x["entity"] for x in exact] == [
        {"user": "alice"},
        {"user": "alice", "client-id": "app"},
    ]
    strict = entities(describe(apis, ("user", EXACT, "alice"), strict=True))
    assert [x["entity"] for x in strict] == [{"user": "alice"}]
    default = entities(describe(apis, ("user", DEFAULT, None)))
    assert [x["entity"] for x in default] == [{"user": None}]
    any_user = entities(describe(apis, ("user", SPECIFIED, None)))
    assert len(any_user) == 3
    any_client = entities(describe(apis, ("client-id", SPECIFIED, None), strict=True))
    assert [x["entity"] for x in any_client] == [{"client-id": None}]
    assert entities(describe(apis, ("ip", SPECIFIED, None))) == []

    answer = alter(apis, controller, entry({"user": "alice"}, producer_byte_rate=None))
    assert [e.error_code for e in answer.entries] == [0]
    assert entities(describe(apis, ("user", EXACT, "alice"), strict=True)) == []


def test_validate_only_changes_nothing(apis: KafkaApis, controller: ControllerServer) -> None:
    answer = alter(
        apis,
        controller,
        entry({"user": "bob"}, producer_byte_rate=1e6),
        entry({"user": "bob"}, nonsense_rate=1.0),
        validate_only=True,
    )
    assert [e.error_code for e in answer.entries] == [0, INVALID]
    apis.replica_manager.apply_image(controller.controller.image)
    assert entities(describe(apis)) == []


def test_bad_entries_are_refused_each_on_its_own(
    apis: KafkaApis, controller: ControllerServer
) -> None:
    good = entry({"user": "carol"}, producer_byte_rate=1e6)
    duplicate_type = AlterClientQuotasRequestEntry(
        entity=[
            AlterClientQuotasRequestEntity("user", "a"),
            AlterClientQuotasRequestEntity("user", "b"),
        ],
        ops=[AlterClientQuotasRequestOp("producer_byte_rate", 1.0, False)],
    )
    answer = alter(
        apis,
        controller,
        entry({}, producer_byte_rate=1e6),
        entry({"group": "g"}, producer_byte_rate=1e6),
        entry({"ip": "10.0.0.1"}, connection_creation_rate=5.0),
        entry({"user": ""}, producer_byte_rate=1e6),
        duplicate_type,
        entry({"user": "carol"}, producer_byte_rate=-1.0),
        entry({"user": "carol"}, unknown_key=1.0),
        entry({"user": "carol"}, consumer_byte_rate=1.5),
        good,
    )
    codes = [(e.error_code, e.error_message) for e in answer.entries]
    assert [c for c, _ in codes] == [INVALID] * 8 + [0]
    assert "fractional" in (codes[7][1] or "")
    assert "empty" in (codes[0][1] or "")
    assert codes[1][1] == "Unhandled client quota entity type: group"
    assert "duplicate" in (codes[4][1] or "")
    assert "unknown_key" in (codes[6][1] or "")
    assert [x.entity_type for x in answer.entries[1].entity] == ["group"]
    assert entities(describe(apis)) == [
        {"entity": {"user": "carol"}, "values": {"producer_byte_rate": 1e6}}
    ]


@pytest.mark.parametrize(
    ("components", "code"),
    [
        ([("", EXACT, "a")], INVALID),
        ([("user", EXACT, "a"), ("user", DEFAULT, None)], INVALID),
        ([("user", EXACT, None)], INVALID),
        ([("user", DEFAULT, "a")], INVALID),
        ([("user", SPECIFIED, "a")], INVALID),
        ([("user", 7, None)], INVALID),
        ([("ip", SPECIFIED, None), ("user", SPECIFIED, None)], INVALID),
        ([("group", EXACT, "g")], ErrorCode.UNSUPPORTED_VERSION),
    ],
)
def test_bad_filters_get_kafkas_errors(
    apis: KafkaApis, components: list[tuple[str, int, str | None]], code: int
) -> None:
    answer = describe(apis, *components)
    assert answer.error_code == code and answer.error_message
    assert answer.entries is None


def test_alter_without_a_controller_answers_its_error(tmp_path: Path) -> None:
    log_manager = LogManager(LogConfig(log_dirs=(str(tmp_path / "logs"),)))
    rm = ReplicaManager(1, log_manager)
    apis = KafkaApis(1, "c", BrokerConfig(), rm, None, lambda: time.monotonic_ns() // 1_000_000)
    try:
        body = AlterClientQuotasRequest(entries=[entry({"user": "x"}, producer_byte_rate=1.0)])
        request = Request(RequestHeader(49, 1, 1, "t"), body, "P")
        answer = asyncio.run(alter_client_quotas.handle(apis, request))
        assert [e.error_code for e in answer.entries] == [ErrorCode.NOT_CONTROLLER]
    finally:
        apis.close()
        log_manager.close()


def _binding(principal: str, op: AclOperation) -> AclBinding:
    return AclBinding(
        ResourcePattern(ResourceType.CLUSTER, "kafka-cluster"),
        AccessControlEntry(principal, "*", op, AclPermissionType.ALLOW),
    )


def test_rules_need_describe_configs_or_alter_configs_on_the_cluster() -> None:
    authorizer = Authorizer(
        bindings=[
            _binding("User:viewer", AclOperation.DESCRIBE_CONFIGS),
            _binding("User:admin", AclOperation.ALTER_CONFIGS),
        ]
    )
    authz = RequestAuthorizer(authorizer, lambda _n: True, {})
    viewer = Session(KafkaPrincipal("User", "viewer"), "127.0.0.1")
    admin = Session(KafkaPrincipal("User", "admin"), "127.0.0.1")
    nobody = Session(KafkaPrincipal("User", "nobody"), "127.0.0.1")
    denied = ErrorCode.CLUSTER_AUTHORIZATION_FAILED

    body = DescribeClientQuotasRequest()
    assert describe_client_quotas.authorize(authz, viewer, 1, body).respond_now is None
    # AlterConfigs implies DescribeConfigs, as in Kafka.
    assert describe_client_quotas.authorize(authz, admin, 1, body).respond_now is None
    refused = describe_client_quotas.authorize(authz, nobody, 1, body)
    answer = refused.respond_now
    assert isinstance(answer, DescribeClientQuotasResponse)
    assert answer.error_code == denied and answer.entries is None
    assert refused.denied == {ResourceType.CLUSTER: 1}

    alteration = AlterClientQuotasRequest(
        entries=[entry({"user": "u"}, producer_byte_rate=1.0), entry({"client-id": None})]
    )
    assert alter_client_quotas.authorize(authz, admin, 1, alteration).respond_now is None
    refused = alter_client_quotas.authorize(authz, viewer, 1, alteration)
    answer = refused.respond_now
    assert isinstance(answer, AlterClientQuotasResponse)
    assert [e.error_code for e in answer.entries] == [denied] * 2
    assert [e.error_message for e in answer.entries] == ["Cluster authorization failed."] * 2
    assert [(x.entity_type, x.entity_name) for x in answer.entries[1].entity] == [
        ("client-id", None)
    ]
