"""The ACL APIs from kafka-python, confluent-kafka and kraftlog's Admin against a cluster
without an authorizer: every one answers SECURITY_DISABLED, as a Kafka broker without
``authorizer.class.name`` does, and nothing is stored. (With the authorizer on:
tests/integration/security/test_kafka_acl_apis.py.)"""

from __future__ import annotations

import pytest

from common.error_codes import ErrorCode
from common.security.acl import (
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    ResourcePattern,
    ResourceType,
)
from kraftlog_client import Admin, KafkaError

pytestmark = [
    pytest.mark.integration,
    pytest.mark.filterwarnings("ignore::DeprecationWarning:importlib.resources._legacy"),
    pytest.mark.filterwarnings("ignore:(read|open)_text is deprecated:DeprecationWarning"),
]


def test_confluent_admin_gets_security_disabled(bootstrap: str) -> None:
    from confluent_kafka import KafkaError as CError
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import (
        AclBinding as CBinding,
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
        ResourceType,
    )

    admin = AdminClient({"bootstrap.servers": bootstrap})
    binding = CBinding(
        ResourceType.TOPIC, "t", ResourcePatternType.LITERAL, "User:a", "*", COp.READ, CPerm.ALLOW
    )
    with pytest.raises(KafkaException) as refused:
        admin.create_acls([binding], request_timeout=30)[binding].result()
    assert refused.value.args[0].code() == CError.SECURITY_DISABLED


def test_kafka_python_admin_gets_security_disabled(bootstrap: str) -> None:
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
    from kafka.errors import SecurityDisabledError

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=30_000)
    try:
        acl = ACL(
            "User:a",
            "*",
            ACLOperation.READ,
            ACLPermissionType.ALLOW,
            ResourcePattern(KType.TOPIC, "t", ACLResourcePatternType.LITERAL),
        )
        assert admin.create_acls([acl])["failed"] == [SecurityDisabledError]
        every = ACLFilter(
            None,
            None,
            ACLOperation.ANY,
            ACLPermissionType.ANY,
            ResourcePatternFilter(KType.ANY, None, ACLResourcePatternType.ANY),
        )
        with pytest.raises(SecurityDisabledError):
            admin.describe_acls(every)
        ((_, matched, error),) = admin.delete_acls([every])
        assert matched == [] and error is SecurityDisabledError
    finally:
        admin.close()


def test_kraftlog_admin_gets_security_disabled(bootstrap: str) -> None:
    binding = AclBinding(
        ResourcePattern(ResourceType.TOPIC, "t"),
        AccessControlEntry("User:a", "*", AclOperation.READ, AclPermissionType.ALLOW),
    )
    with Admin({"bootstrap.servers": bootstrap}) as admin:
        for call in (
            lambda: admin.create_acls([binding]),
            lambda: admin.describe_acls(AclBindingFilter()),
            lambda: admin.delete_acls([AclBindingFilter()]),
        ):
            with pytest.raises(KafkaError) as refused:
                call()
            assert refused.value.code is ErrorCode.SECURITY_DISABLED
