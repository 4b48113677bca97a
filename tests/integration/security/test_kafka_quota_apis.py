"""The Kafka client quota APIs (DescribeClientQuotas, AlterClientQuotas) end to end on a real
cluster with the authorizer on: one controller and one broker with a PLAINTEXT listener
(User:ANONYMOUS is a super user, as an operator's admin would be) and a SASL_PLAINTEXT one
(SCRAM users).

- kraftlog's ``Admin`` and ``kraftlog quotas --bootstrap-server`` set, remove and describe
  quotas through the broker, and see what the controller path sees;
- kafka-python's own encoders and decoders of both APIs (its admin client has no quota calls
  in 3.0: the requests go through its connection manager) talk to the broker at the highest
  version both sides speak; confluent-kafka 2.x's AdminClient has no quota calls at all;
- DescribeConfigs on the cluster lets a principal describe quotas and AlterConfigs alter them;
  without them a client gets CLUSTER_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from common.security.acl import (
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    ResourcePattern,
    ResourceType,
)
from kraftlog_client import (
    Admin,
    ClientQuotaAlteration,
    ClientQuotaEntity,
    ClientQuotaFilterComponent,
    ClientQuotaOp,
    KafkaError,
)
from metadata.security_client import describe_client_quotas
from tests.integration.clusters import ScramCluster as Secured
from tests.integration.clusters import kraftlog, scram_cluster

pytestmark = [
    pytest.mark.integration,
    pytest.mark.filterwarnings("ignore::DeprecationWarning:importlib.resources._legacy"),
    pytest.mark.filterwarnings("ignore:(read|open)_text is deprecated:DeprecationWarning"),
]

DEADLINE_S = 60.0
VIEWER_PASSWORD = "viewer-" + uuid.uuid4().hex
NOBODY_PASSWORD = "nobody-" + uuid.uuid4().hex
CLUSTER_AUTHORIZATION_FAILED = 31
INVALID_REQUEST = 42


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    path = tmp_path_factory.mktemp("quota-cluster") / "c"
    with scram_cluster(
        path, {"viewer": VIEWER_PASSWORD, "nobody": NOBODY_PASSWORD}, DEADLINE_S
    ) as cluster:
        yield cluster


def _until(check, what: str) -> None:  # type: ignore[no-untyped-def]
    """Until ``check()`` is true: a user's credentials and ACLs reach the broker after the
    controller commits them."""
    deadline = time.monotonic() + DEADLINE_S
    while True:
        try:
            if check():
                return
        except Exception:
            if time.monotonic() >= deadline:
                raise
        assert time.monotonic() < deadline, what
        time.sleep(0.2)


def _entity(**names: str | None) -> ClientQuotaEntity:
    return ClientQuotaEntity.of({k.replace("_", "-"): v for k, v in names.items()})


def test_kraftlog_admin_and_command(secured: Secured) -> None:
    alice = _entity(user="alice-q")
    alice_app = _entity(user="alice-q", client_id="app-q")
    with Admin({"bootstrap.servers": secured.plaintext}) as admin:
        admin.alter_client_quotas(
            [
                ClientQuotaAlteration(alice, (ClientQuotaOp("producer_byte_rate", 1048576.0),)),
                ClientQuotaAlteration(
                    alice_app,
                    (
                        ClientQuotaOp("consumer_byte_rate", 2e6),
                        ClientQuotaOp("request_percentage", 25.0),
                    ),
                ),
            ]
        )
        mine = [ClientQuotaFilterComponent.of_entity("user", "alice-q")]
        assert admin.describe_client_quotas(mine) == {
            alice: {"producer_byte_rate": 1048576.0},
            alice_app: {"consumer_byte_rate": 2e6, "request_percentage": 25.0},
        }
        assert admin.describe_client_quotas(mine, strict=True) == {
            alice: {"producer_byte_rate": 1048576.0}
        }
        # The controller path sees the same quotas.
        with secured.cluster.client(10.0) as client:
            stored = {
                (e.entity.user, e.entity.client_id): e.values
                for e in describe_client_quotas(client, "alice-q")
            }
        assert stored == {
            ("alice-q", None): {"producer_byte_rate": 1048576.0},
            ("alice-q", "app-q"): {"consumer_byte_rate": 2e6, "request_percentage": 25.0},
        }

        # validate_only checks and changes nothing; a bad entry raises its error.
        bob = _entity(user="bob-q")
        admin.alter_client_quotas(
            [ClientQuotaAlteration(bob, (ClientQuotaOp("producer_byte_rate", 1.0),))],
            validate_only=True,
        )
        bobs = [ClientQuotaFilterComponent.of_entity("user", "bob-q")]
        assert admin.describe_client_quotas(bobs) == {}
        with pytest.raises(KafkaError, match="INVALID_REQUEST"):
            admin.alter_client_quotas(
                [ClientQuotaAlteration(bob, (ClientQuotaOp("no_such_rate", 1.0),))]
            )
        with pytest.raises(KafkaError, match="INVALID_REQUEST"):
            admin.alter_client_quotas(
                [ClientQuotaAlteration(_entity(ip="10.0.0.1"), (ClientQuotaOp("x", 1.0),))]
            )
        with pytest.raises(KafkaError, match="UNSUPPORTED_VERSION"):
            admin.describe_client_quotas([ClientQuotaFilterComponent.of_entity_type("group")])

        b = ("--bootstrap-server", secured.plaintext)
        out = kraftlog(
            "quotas", "set", "--user-default", "--client-id", "cli-q",
            "--consumer-byte-rate", "3e6", *b,
        )  # fmt: skip
        assert out.returncode == 0, out.stderr
        assert "user=<default>,client-id=cli-q: consumer_byte_rate = 3e+06" in out.stdout
        out = kraftlog("quotas", "describe", "--client-id", "cli-q", "--json", *b)
        assert out.returncode == 0, out.stderr
        assert json.loads(out.stdout) == [
            {"entity": "user=<default>,client-id=cli-q", "quotas": {"consumer_byte_rate": 3e6}}
        ]
        defaults = [ClientQuotaFilterComponent.of_default_entity("user")]
        assert admin.describe_client_quotas(defaults) == {
            _entity(user=None, client_id="cli-q"): {"consumer_byte_rate": 3e6}
        }
        out = kraftlog(
            "quotas", "set", "--user-default", "--client-id", "cli-q",
            "--remove", "consumer_byte_rate", *b,
        )  # fmt: skip
        assert out.returncode == 0, out.stderr
        assert admin.describe_client_quotas(defaults) == {}
        out = kraftlog("quotas", "set", "--user", "x", "--request-percentage", "-5", *b)
        assert out.returncode == 1 and "INVALID_REQUEST" in out.stderr


def _kafka_python_admin(secured: Secured, **kw: Any) -> Any:
    from kafka.admin import KafkaAdminClient

    return KafkaAdminClient(request_timeout_ms=30_000, **kw)


def _send(admin: Any, request: Any) -> Any:
    return admin._manager.run(admin._manager.send, request)


def test_kafka_python_requests(secured: Secured) -> None:
    from kafka.protocol.admin.client_quotas import (
        AlterClientQuotasRequest,
        DescribeClientQuotasRequest,
    )

    admin = _kafka_python_admin(secured, bootstrap_servers=secured.plaintext)
    try:
        entity = [("user", "kp-q"), ("client-id", None)]
        altered = _send(
            admin,
            AlterClientQuotasRequest(
                entries=[(entity, [("producer_byte_rate", 4096.0, False)])], validate_only=False
            ),
        )
        ((result,),) = [altered.entries]
        assert result.error_code == 0
        assert [(e.entity_type, e.entity_name) for e in result.entity] == entity
        exactly = [("user", 0, "kp-q"), ("client-id", 1, None)]
        described = _send(admin, DescribeClientQuotasRequest(components=exactly, strict=True))
        assert described.error_code == 0
        ((entry,),) = [described.entries]
        assert [(e.entity_type, e.entity_name) for e in entry.entity] == entity
        assert [(v.key, v.value) for v in entry.values] == [("producer_byte_rate", 4096.0)]
        bad = _send(admin, DescribeClientQuotasRequest(components=[("user", 9, None)]))
        assert bad.error_code == INVALID_REQUEST and bad.entries is None
        removed = _send(
            admin,
            AlterClientQuotasRequest(
                entries=[(entity, [("producer_byte_rate", 0.0, True)])], validate_only=False
            ),
        )
        assert [e.error_code for e in removed.entries] == [0]
        empty = _send(admin, DescribeClientQuotasRequest(components=exactly, strict=True))
        assert empty.error_code == 0 and list(empty.entries) == []
    finally:
        admin.close()


def test_confluent_kafka_has_no_quota_calls() -> None:
    """If a confluent-kafka release gains them, this test says so, and one should be added."""
    from confluent_kafka.admin import AdminClient

    assert not [name for name in dir(AdminClient) if "quota" in name.lower()]


def test_authorization_of_the_quota_apis(secured: Secured) -> None:
    """DescribeConfigs on the cluster lets a principal describe quotas; altering needs
    AlterConfigs. The binding that grants it is created over the Kafka protocol."""
    with Admin({"bootstrap.servers": secured.plaintext}) as admin:
        admin.create_acls(
            [
                AclBinding(
                    ResourcePattern(ResourceType.CLUSTER, "kafka-cluster"),
                    AccessControlEntry(
                        "User:viewer", "*", AclOperation.DESCRIBE_CONFIGS, AclPermissionType.ALLOW
                    ),
                )
            ]
        )
        admin.alter_client_quotas(
            [
                ClientQuotaAlteration(
                    _entity(user="seen-q"), (ClientQuotaOp("producer_byte_rate", 5e6),)
                )
            ]
        )
    seen = [ClientQuotaFilterComponent.of_entity("user", "seen-q")]
    with Admin(secured.sasl_config("viewer", VIEWER_PASSWORD)) as viewer:
        _until(
            lambda: (
                viewer.describe_client_quotas(seen)
                == {_entity(user="seen-q"): {"producer_byte_rate": 5e6}}
            ),
            "the viewer never described the quotas",
        )
        with pytest.raises(KafkaError) as err:
            viewer.alter_client_quotas(
                [ClientQuotaAlteration(_entity(user="seen-q"), (ClientQuotaOp("x", None),))]
            )
        assert int(err.value.code) == CLUSTER_AUTHORIZATION_FAILED
        assert "Cluster authorization failed." in str(err.value)
    with Admin(secured.sasl_config("nobody", NOBODY_PASSWORD)) as nobody:
        with pytest.raises(KafkaError) as err:
            nobody.describe_client_quotas()
        assert int(err.value.code) == CLUSTER_AUTHORIZATION_FAILED

    from kafka.errors import ClusterAuthorizationFailedError, for_code
    from kafka.protocol.admin.client_quotas import (
        AlterClientQuotasRequest,
        DescribeClientQuotasRequest,
    )

    kp = _kafka_python_admin(
        secured,
        bootstrap_servers=secured.sasl,
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="SCRAM-SHA-512",
        sasl_plain_username="nobody",
        sasl_plain_password=NOBODY_PASSWORD,
    )
    try:
        described = _send(kp, DescribeClientQuotasRequest(components=[], strict=False))
        assert for_code(described.error_code) is ClusterAuthorizationFailedError
        assert described.entries is None
        altered = _send(
            kp,
            AlterClientQuotasRequest(
                entries=[([("user", "seen-q")], [("producer_byte_rate", 1.0, False)])],
                validate_only=False,
            ),
        )
        assert [e.error_code for e in altered.entries] == [CLUSTER_AUTHORIZATION_FAILED]
    finally:
        kp.close()
