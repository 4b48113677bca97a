"""ACLs on the controller's gRPC RPCs under mutual TLS (metadata/control_plane_authz.py).

A controller on the in-memory quorum (no processes are started: deploy's ControllerComponent
does not pass an authorizer yet, see docs/security.md) with real gRPC mutual TLS. The broker's
certificate principal is a super user; an admin certificate without ACLs is refused
CreateTopics, DescribeCluster, CreateAcls and RegisterBroker, gets CreateTopics once an ACL
allows Create on a prefix of topics, is still refused a topic outside it, and loses it again to
a DENY.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from common.configdef import from_props
from common.error_codes import ErrorCode
from common.security.acl import AclOperation, AclPermissionType, PatternType, ResourceType
from common.security.config import SecurityConfig
from common.security.principal import KafkaPrincipal
from data_plane.security import certs
from data_plane.security.grpc_tls import channel_credentials, server_credentials
from metadata import security_messages as sm
from metadata.client import ControllerClient, ControllerError
from metadata.control_plane_authz import (
    ControlPlaneAuthorizer,
    control_plane_authorizer,
    principal_from_pem,
)
from metadata.controller_config import ControllerConfig
from metadata.messages import NewTopic
from metadata.security_client import create_acls
from metadata.service import ControllerServer
from metadata.snapshot import build_snapshot
from tests.unit.metadata.memlog import InMemoryQuorum

DEADLINE_S = 10.0
ADMIN = "User:CN=admin,O=kraftlog development"
BROKER = "User:CN=broker,O=kraftlog development"


def _cfg(pki: Path, name: str) -> SecurityConfig:
    return from_props(
        SecurityConfig,
        {
            "kraftlog.control.plane.ssl.enabled": "true",
            "ssl.keystore.location": str(pki / f"{name}.pem"),
            "ssl.key.location": str(pki / f"{name}-key.pem"),
            "ssl.truststore.location": str(pki / "ca.pem"),
        },
    )


@pytest.fixture(scope="module")
def pki(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("pki")
    certs.create_dev_pki(out, ["controller", "broker", "admin"])
    return out


@pytest.fixture
def address(pki: Path) -> Iterator[str]:
    quorum = InMemoryQuorum(build_snapshot, 100_000)
    authorizer = ControlPlaneAuthorizer(
        [BROKER], own_principal=principal_from_pem((pki / "controller.pem").read_bytes())
    )
    server = ControllerServer(
        1,
        quorum.voter(1),
        ControllerConfig(broker_session_timeout_ms=60_000),
        "127.0.0.1",
        0,
        credentials=server_credentials(_cfg(pki, "controller")),
        authorizer=authorizer,
    )
    server.start()
    quorum.elect(1)
    try:
        deadline = time.monotonic() + DEADLINE_S
        while not server.is_active:
            assert time.monotonic() < deadline, "controller never became active"
            time.sleep(0.01)
        yield server.address
    finally:
        server.stop()


def _client(pki: Path, address: str, name: str) -> ControllerClient:
    return ControllerClient(address, DEADLINE_S, credentials=channel_credentials(_cfg(pki, name)))


def _acl(
    op: AclOperation,
    rtype: ResourceType,
    name: str,
    ptype: PatternType,
    perm: AclPermissionType = AclPermissionType.ALLOW,
) -> sm.AclCreation:
    return sm.AclCreation(int(rtype), name, int(ptype), ADMIN, "*", int(op), int(perm))


def test_certificate_principal_matches_the_listener_naming(pki: Path) -> None:
    assert str(principal_from_pem((pki / "admin.pem").read_bytes())) == ADMIN


def test_admin_needs_acls_broker_is_super_user(pki: Path, address: str) -> None:
    with _client(pki, address, "admin") as admin, _client(pki, address, "broker") as broker:
        with pytest.raises(ControllerError) as refused:
            admin.create_topics([NewTopic("admin-orders", 1, 1)])
        assert refused.value.error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
        assert "admin-orders" in str(refused.value)
        for call in (
            admin.describe_cluster,
            lambda: create_acls(
                admin,
                [
                    _acl(
                        AclOperation.ALL, ResourceType.CLUSTER, "kafka-cluster", PatternType.LITERAL
                    )
                ],
            ),
        ):
            with pytest.raises(ControllerError) as refused:
                call()
            assert refused.value.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED

        with pytest.raises(ControllerError) as refused:
            admin.register_broker(7, "admin-impostor", {"PLAINTEXT": ("127.0.0.1", 9092)})
        assert refused.value.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED

        # The broker certificate is a super user: it registers (ClusterAction) and may grant
        # the admin a prefix.
        registered = broker.register_broker(7, "inc-7", {"PLAINTEXT": ("127.0.0.1", 9092)})
        assert registered.error_code == 0
        deadline = time.monotonic() + DEADLINE_S
        # A broker is unfenced once its heartbeat reports the metadata it has caught up to.
        caught_up = broker.describe_cluster().metadata_offset
        while broker.broker_heartbeat(7, registered.broker_epoch, caught_up).is_fenced:
            assert time.monotonic() < deadline, "broker 7 never unfenced"
            time.sleep(0.05)
        assert broker.describe_cluster().controller_id == 1
        results = create_acls(
            broker,
            [
                _acl(AclOperation.CREATE, ResourceType.TOPIC, "admin-", PatternType.PREFIXED),
            ],
        )
        assert [r.error_code for r in results] == [0]
        assert admin.create_topics([NewTopic("admin-orders", 1, 1)])[0].error_code == 0
        with pytest.raises(ControllerError) as refused:
            admin.create_topics([NewTopic("payments", 1, 1)])
        assert refused.value.error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED

        # Deny wins over allow.
        results = create_acls(
            broker,
            [
                _acl(
                    AclOperation.CREATE,
                    ResourceType.TOPIC,
                    "admin-secret",
                    PatternType.LITERAL,
                    AclPermissionType.DENY,
                )
            ],
        )
        assert [r.error_code for r in results] == [0]
        with pytest.raises(ControllerError) as refused:
            admin.create_topics([NewTopic("admin-secret", 1, 1)])
        assert refused.value.error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED


def test_enforced_only_with_mutual_tls_and_the_authorizer(pki: Path) -> None:
    props = {
        "ssl.keystore.location": str(pki / "controller.pem"),
        "ssl.key.location": str(pki / "controller-key.pem"),
        "ssl.truststore.location": str(pki / "ca.pem"),
        "super.users": f"{BROKER};User:ops",
    }
    assert control_plane_authorizer(from_props(SecurityConfig, props)) is None
    props["kraftlog.control.plane.ssl.enabled"] = "true"
    assert control_plane_authorizer(from_props(SecurityConfig, props)) is None
    props["kraftlog.authorizer.enabled"] = "true"
    authz = control_plane_authorizer(from_props(SecurityConfig, props))
    assert authz is not None
    controller = principal_from_pem((pki / "controller.pem").read_bytes())
    for principal in (controller, KafkaPrincipal("User", "ops")):
        assert authz.check("RegisterBroker", None, principal, {}) is None
    refusal = authz.check("RegisterBroker", None, KafkaPrincipal("User", "CN=admin"), {})
    assert refusal is not None
    assert refusal.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
