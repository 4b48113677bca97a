"""RequestHooks: the per-request plan the connection layer follows (SASL, ACLs, quotas,
metrics)."""

from __future__ import annotations

import uuid

from common.configdef import from_props
from common.error_codes import ErrorCode
from common.protocol.api_keys import ApiKey
from common.protocol.codec import RequestHeader
from common.protocol.messages.describe_groups import DescribeGroupsRequest, DescribeGroupsResponse
from common.protocol.messages.list_groups import (
    ListGroupsRequest,
    ListGroupsResponse,
    ListGroupsResponseGroup,
)
from common.security.acl import (
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    ResourcePattern,
    ResourceType,
)
from common.security.config import SecurityConfig
from common.security.plain import plain_message
from common.security.scram import MIN_ITERATIONS, ScramMechanism, make_credential
from data_plane.broker.handlers import authorization_rules
from data_plane.metrics.names import NodeMetrics
from data_plane.security.broker_security import BrokerSecurity
from data_plane.security.request_hooks import RequestHooks, api_name, raw_frame
from metadata.image import MetadataImage
from metadata.security_image import SecurityImage

SHA512 = ScramMechanism.SCRAM_SHA_512


def header(api: ApiKey, version: int, client_id: str = "cid") -> RequestHeader:
    return RequestHeader(int(api), version, 1, client_id)


def setup(authorizer: bool = False, quotas=None):
    cfg = from_props(
        SecurityConfig,
        {
            "listener.security.protocol.map": "P:PLAINTEXT,S:SASL_PLAINTEXT",
            "sasl.enabled.mechanisms": "PLAIN",
            "kraftlog.authorizer.enabled": "true" if authorizer else "false",
        },
    )
    broker = BrokerSecurity(
        cfg, clock_ms=lambda: 1_000_000, authorization_rules=authorization_rules()
    )
    allow = AclBinding(
        ResourcePattern(ResourceType.TOPIC, "ok"),
        AccessControlEntry("User:alice", "*", AclOperation.ALL, AclPermissionType.ALLOW),
    )
    broker.on_image(
        MetadataImage(
            security=SecurityImage(
                scram={("alice", SHA512): make_credential(SHA512, "pw", iterations=MIN_ITERATIONS)},
                acls={uuid.UUID(int=1): allow},
                quotas=quotas or {},
            )
        )
    )
    return broker, NodeMetrics()


def test_api_names() -> None:
    assert api_name(ApiKey.SASL_AUTHENTICATE) == "SaslAuthenticate"
    assert api_name(ApiKey.PRODUCE) == "Produce"
    assert raw_frame(b"abc") == b"\x00\x00\x00\x03abc"


def test_sasl_flow_through_hooks_and_failure_metric() -> None:
    broker, metrics = setup()
    muted: list[int] = []
    hooks = RequestHooks(broker.for_connection("S", "1.2.3.4", None), metrics, "S", muted.append)
    plan = hooks.before(header(ApiKey.METADATA, 8), {}, 10)
    assert plan.close_now
    assert metrics.authentication_failures.value("S") == 1
    hooks = RequestHooks(broker.for_connection("S", "1.2.3.4", None), metrics, "S", muted.append)
    plan = hooks.before(header(ApiKey.SASL_HANDSHAKE, 1), {"mechanism": "PLAIN"}, 10)
    assert plan.reply == {"error_code": 0, "mechanisms": ["PLAIN"]} and not plan.close_after
    plan = hooks.before(
        header(ApiKey.SASL_AUTHENTICATE, 1), {"auth_bytes": plain_message("alice", "x")}, 10
    )
    assert plan.reply["error_code"] == ErrorCode.SASL_AUTHENTICATION_FAILED and plan.close_after
    assert metrics.authentication_failures.value("S") == 2
    assert metrics.requests.value("SaslAuthenticate") == 1


def test_v0_tokens_through_hooks() -> None:
    broker, metrics = setup()
    hooks = RequestHooks(broker.for_connection("S", "h", None), metrics, "S", lambda _ms: None)
    hooks.before(header(ApiKey.SASL_HANDSHAKE, 0), {"mechanism": "PLAIN"}, 10)
    assert hooks.expects_raw_token
    assert hooks.raw_token(plain_message("alice", "pw")) == raw_frame(b"")
    assert not hooks.expects_raw_token


def test_acl_merge_bytes_and_latency() -> None:
    broker, metrics = setup(authorizer=True)
    conn = broker.for_connection("S", "h", None)
    hooks = RequestHooks(conn, metrics, "S", lambda _ms: None)
    hooks.before(header(ApiKey.SASL_HANDSHAKE, 1), {"mechanism": "PLAIN"}, 1)
    hooks.before(
        header(ApiKey.SASL_AUTHENTICATE, 1), {"auth_bytes": plain_message("alice", "pw")}, 1
    )
    body = {
        "topic_data": [
            {"name": "ok", "partition_data": [{"index": 0, "records": b"x" * 100}]},
            {"name": "no", "partition_data": [{"index": 0, "records": b"y" * 50}]},
        ]
    }
    plan = hooks.before(header(ApiKey.PRODUCE, 7), body, 200)
    assert [t["name"] for t in plan.body["topic_data"]] == ["ok"]
    out = plan.after({"responses": [{"name": "ok", "partition_responses": []}]})
    assert [t["name"] for t in out["responses"]] == ["ok", "no"]
    assert metrics.bytes_in.value("ok") == 100 and metrics.bytes_in.value("no") == 0
    assert metrics.authorization_denials.value("Topic") == 1
    assert metrics.request_latency.count("Produce") == 1
    fetch = hooks.before(header(ApiKey.FETCH, 11), {"replica_id": -1, "topics": []}, 10)
    fetch.after({"responses": [{"topic": "ok", "partitions": [{"records": b"z" * 30}]}]})
    assert metrics.bytes_out.value("ok") == 30


def test_typed_answers_get_the_refusals_merged() -> None:
    """A typed response goes through the same finishing steps as a dict one: the refused
    groups of a DescribeGroups come back as GROUP_AUTHORIZATION_FAILED entries, and a
    ListGroups hides the groups the principal may not describe."""
    broker, metrics = setup(authorizer=True)
    hooks = RequestHooks(broker.for_connection("S", "h", None), metrics, "S", lambda _ms: None)
    hooks.before(header(ApiKey.SASL_HANDSHAKE, 1), {"mechanism": "PLAIN"}, 1)
    hooks.before(
        header(ApiKey.SASL_AUTHENTICATE, 1), {"auth_bytes": plain_message("alice", "pw")}, 1
    )
    plan = hooks.before(header(ApiKey.DESCRIBE_GROUPS, 5), DescribeGroupsRequest(["g"]), 10)
    assert plan.reply is None and plan.body.groups == []
    out = plan.after(DescribeGroupsResponse(groups=[]))
    assert [(g.group_id, g.error_code) for g in out.groups] == [
        ("g", ErrorCode.GROUP_AUTHORIZATION_FAILED)
    ]
    plan = hooks.before(header(ApiKey.LIST_GROUPS, 4), ListGroupsRequest(), 10)
    out = plan.after(ListGroupsResponse(groups=[ListGroupsResponseGroup("g", "consumer")]))
    assert out.groups == []


def test_quota_throttles_and_mutes() -> None:
    quotas = {("ANONYMOUS", None): {"producer_byte_rate": 100.0, "consumer_byte_rate": 100.0}}
    broker, metrics = setup(quotas=quotas)
    muted: list[int] = []
    hooks = RequestHooks(broker.for_connection("P", "h", None), metrics, "P", muted.append)
    plan = hooks.before(header(ApiKey.PRODUCE, 7), {"topic_data": []}, 10_000)
    out = plan.after({"responses": [], "throttle_time_ms": 0})
    assert out["throttle_time_ms"] == muted[0] > 0
    assert metrics.throttle_time.value("produce") == muted[0] / 1000
    plan = hooks.before(header(ApiKey.FETCH, 11), {"replica_id": -1, "topics": []}, 10)
    big = {
        "responses": [
            {"topic": "t", "partitions": [{"partition_index": 0, "records": b"r" * 5000}]}
        ]
    }
    out = plan.after(big)
    assert out["throttle_time_ms"] > 0 and len(muted) == 2
    # Replica fetches are never throttled.
    plan = hooks.before(header(ApiKey.FETCH, 11), {"replica_id": 2, "topics": []}, 10)
    assert "throttle_time_ms" not in plan.after({"responses": []})
    assert len(muted) == 2
