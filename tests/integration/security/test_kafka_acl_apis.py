"""The Kafka ACL APIs (CreateAcls, DescribeAcls, DeleteAcls) end to end on a real cluster with
the authorizer on: one controller and one broker with a PLAINTEXT listener (User:ANONYMOUS
is a super user, as an operator's admin would be) and a SASL_PLAINTEXT one (SCRAM users).

- confluent-kafka's, kafka-python's and kraftlog's own admin clients create, describe and
  delete bindings; ``kraftlog acls --bootstrap-server`` goes the same way;
- bindings created over the Kafka protocol are enforced by the broker at once;
- without Describe (or Alter) on the cluster a client gets CLUSTER_AUTHORIZATION_FAILED
  (librdkafka drops DescribeAcls' top-level error: confluent-kafka sees no bindings).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator

import pytest

from common.security.acl import (
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from kraftlog_client import Admin, KafkaError
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


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    path = tmp_path_factory.mktemp("acl-cluster") / "c"
    with scram_cluster(
        path, {"viewer": VIEWER_PASSWORD, "nobody": NOBODY_PASSWORD}, DEADLINE_S
    ) as cluster:
        yield cluster


def _until(check, what: str) -> None:  # type: ignore[no-untyped-def]
    """Until ``check()`` is true: a user's credentials reach the broker after the controller
    commits them."""
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


def test_confluent_admin_create_describe_delete(secured: Secured) -> None:
    from confluent_kafka.admin import (
        AclBinding as CBinding,
    )
    from confluent_kafka.admin import (
        AclBindingFilter as CFilter,
    )
    from confluent_kafka.admin import (
        AclOperation as COp,
    )
    from confluent_kafka.admin import (
        AclPermissionType as CPerm,
    )
    from confluent_kafka.admin import (
        AdminClient,
        ResourcePatternType,
    )
    from confluent_kafka.admin import (
        ResourceType as CType,
    )

    admin = AdminClient({"bootstrap.servers": secured.plaintext})
    read = CBinding(
        CType.TOPIC, "ck-orders", ResourcePatternType.LITERAL, "User:ck", "*", COp.READ,
        CPerm.ALLOW,
    )  # fmt: skip
    deny = CBinding(
        CType.GROUP, "ck-", ResourcePatternType.PREFIXED, "User:ck", "*", COp.ALL, CPerm.DENY
    )
    for future in admin.create_acls([read, deny], request_timeout=30).values():
        assert future.result() is None
    every_ck = CFilter(
        CType.ANY, None, ResourcePatternType.ANY, "User:ck", None, COp.ANY, CPerm.ANY
    )
    described = admin.describe_acls(every_ck, request_timeout=30).result()
    assert sorted(described, key=str) == sorted([read, deny], key=str)
    # MATCH: every pattern covering a group name.
    match = CFilter(
        CType.GROUP, "ck-app", ResourcePatternType.MATCH, None, None, COp.ANY, CPerm.ANY
    )
    assert admin.describe_acls(match, request_timeout=30).result() == [deny]
    nothing = CFilter(
        CType.TOPIC, "no-such", ResourcePatternType.LITERAL, None, None, COp.ANY, CPerm.ANY
    )
    assert admin.describe_acls(nothing, request_timeout=30).result() == []
    deleted = admin.delete_acls([every_ck], request_timeout=30)
    assert sorted(deleted[every_ck].result(), key=str) == sorted([read, deny], key=str)
    assert admin.describe_acls(every_ck, request_timeout=30).result() == []


def test_kafka_python_admin_create_describe_delete(secured: Secured) -> None:
    from kafka.admin import (
        ACL,
        ACLFilter,
        ACLOperation,
        ACLPermissionType,
        ACLResourcePatternType,
        KafkaAdminClient,
        ResourcePattern,
        ResourcePatternFilter,
    )
    from kafka.admin import ResourceType as KType

    admin = KafkaAdminClient(bootstrap_servers=secured.plaintext, request_timeout_ms=30_000)
    try:
        acl = ACL(
            "User:kp",
            "*",
            ACLOperation.WRITE,
            ACLPermissionType.ALLOW,
            ResourcePattern(KType.TOPIC, "kp-", ACLResourcePatternType.PREFIXED),
        )
        created = admin.create_acls([acl])
        assert created["failed"] == [] and created["succeeded"] == [acl]
        flt = ACLFilter(
            "User:kp",
            None,
            ACLOperation.ANY,
            ACLPermissionType.ANY,
            ResourcePatternFilter(KType.ANY, None, ACLResourcePatternType.ANY),
        )
        described, _error = admin.describe_acls(flt)
        assert described == [acl]
        ((_, matched, error),) = admin.delete_acls([flt])
        assert matched == [acl] and error.errno == 0
        assert admin.describe_acls(flt)[0] == []
    finally:
        admin.close()


def test_kraftlog_admin_and_command(secured: Secured) -> None:
    binding = AclBinding(
        ResourcePattern(ResourceType.TRANSACTIONAL_ID, "etl-", PatternType.PREFIXED),
        AccessControlEntry("User:etl", "*", AclOperation.WRITE, AclPermissionType.ALLOW),
    )
    mine = AclBindingFilter(principal="User:etl")
    with Admin({"bootstrap.servers": secured.plaintext}) as admin:
        admin.create_acls([binding])
        assert admin.describe_acls(mine) == [binding]
        b = ("--bootstrap-server", secured.plaintext)
        out = kraftlog("acls", "list", "--principal", "User:etl", "--json", *b)
        assert out.returncode == 0, out.stderr
        assert json.loads(out.stdout) == [
            {
                "resource_type": "TransactionalId",
                "resource_name": "etl-",
                "pattern_type": "PREFIXED",
                "principal": "User:etl",
                "host": "*",
                "operation": "Write",
                "permission": "ALLOW",
            }
        ]
        # kafka-acls.sh's flag form.
        out = kraftlog(
            "acls", "--add", "--allow-principal", "User:etl", "--operation", "Read",
            "--topic", "etl-out", "--resource-pattern-type", "literal", *b,
        )  # fmt: skip
        assert out.returncode == 0 and "added ALLOW User:etl Read on Topic:etl-out" in out.stdout
        assert len(admin.describe_acls(mine)) == 2
        out = kraftlog("acls", "remove", "--principal", "User:etl", *b)
        assert out.returncode == 0 and out.stdout.count("removed") == 2, out
        assert admin.describe_acls(mine) == []
        with pytest.raises(KafkaError, match="INVALID_REQUEST"):
            admin.describe_acls(AclBindingFilter(operation=AclOperation.UNKNOWN))


def test_authorization_of_the_acl_apis(secured: Secured) -> None:
    """Describe on the cluster lets a principal list ACLs; creating and deleting need Alter.
    The binding that grants it is created over the Kafka protocol and enforced at once."""
    from confluent_kafka import KafkaError as CError
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import (
        AclBinding as CBinding,
    )
    from confluent_kafka.admin import (
        AclBindingFilter as CFilter,
    )
    from confluent_kafka.admin import (
        AclOperation as COp,
    )
    from confluent_kafka.admin import (
        AclPermissionType as CPerm,
    )
    from confluent_kafka.admin import (
        AdminClient,
        ResourcePatternType,
    )
    from confluent_kafka.admin import (
        ResourceType as CType,
    )

    with Admin({"bootstrap.servers": secured.plaintext}) as admin:
        admin.create_acls(
            [
                AclBinding(
                    ResourcePattern(ResourceType.CLUSTER, "kafka-cluster"),
                    AccessControlEntry(
                        "User:viewer", "*", AclOperation.DESCRIBE, AclPermissionType.ALLOW
                    ),
                )
            ]
        )
    every = CFilter(CType.ANY, None, ResourcePatternType.ANY, None, None, COp.ANY, CPerm.ANY)
    viewer = AdminClient(secured.sasl_config("viewer", VIEWER_PASSWORD))
    _until(
        lambda: isinstance(viewer.describe_acls(every, request_timeout=10).result(), list),
        "the viewer never described the ACLs",
    )
    listed = viewer.describe_acls(every, request_timeout=10).result()
    assert any(b.principal == "User:viewer" for b in listed)
    new = CBinding(
        CType.TOPIC, "x", ResourcePatternType.LITERAL, "User:viewer", "*", COp.READ, CPerm.ALLOW
    )
    with pytest.raises(KafkaException) as denied:
        viewer.create_acls([new], request_timeout=10)[new].result()
    assert denied.value.args[0].code() == CError.CLUSTER_AUTHORIZATION_FAILED
    with pytest.raises(KafkaException) as denied:
        viewer.delete_acls([every], request_timeout=10)[every].result()
    assert denied.value.args[0].code() == CError.CLUSTER_AUTHORIZATION_FAILED

    # kraftlog's Admin over SASL reports the same error.
    config = {**secured.sasl_config("nobody", NOBODY_PASSWORD)}
    with Admin(config) as admin, pytest.raises(KafkaError) as err:
        admin.describe_acls(AclBindingFilter())
    assert int(err.value.code) == CLUSTER_AUTHORIZATION_FAILED

    # librdkafka drops DescribeAcls' top-level error: confluent-kafka gets no bindings.
    nobody = AdminClient(secured.sasl_config("nobody", NOBODY_PASSWORD))
    assert nobody.describe_acls(every, request_timeout=10).result() == []

    from kafka.admin import (
        ACLFilter,
        ACLOperation,
        ACLPermissionType,
        ACLResourcePatternType,
        KafkaAdminClient,
        ResourcePatternFilter,
    )
    from kafka.admin import ResourceType as KType
    from kafka.errors import ClusterAuthorizationFailedError

    kp = KafkaAdminClient(
        bootstrap_servers=secured.sasl,
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="SCRAM-SHA-512",
        sasl_plain_username="nobody",
        sasl_plain_password=NOBODY_PASSWORD,
        request_timeout_ms=30_000,
    )
    try:
        anything = ACLFilter(
            None,
            None,
            ACLOperation.ANY,
            ACLPermissionType.ANY,
            ResourcePatternFilter(KType.ANY, None, ACLResourcePatternType.ANY),
        )
        with pytest.raises(ClusterAuthorizationFailedError):
            kp.describe_acls(anything)
    finally:
        kp.close()
