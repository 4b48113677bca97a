"""Authorizer decisions as a table: literal, wildcard and prefixed patterns, deny wins,
implied operations, super users, hosts and the no-ACL default."""

from __future__ import annotations

import pytest

from common.security.acl import (
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    Authorizer,
    InvalidAclError,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from common.security.principal import KafkaPrincipal

T, G, C = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER
LIT, PRE = PatternType.LITERAL, PatternType.PREFIXED
ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY
Op = AclOperation


def b(rtype, name, ptype, principal, op, perm, host="*") -> AclBinding:
    return AclBinding(
        ResourcePattern(rtype, name, ptype), AccessControlEntry(principal, host, op, perm)
    )


BINDINGS = [
    b(T, "orders", LIT, "User:reader", Op.READ, ALLOW),
    b(T, "logs-", PRE, "User:reader", Op.WRITE, ALLOW),
    b(T, "logs-secret", LIT, "User:reader", Op.WRITE, DENY),
    b(T, "*", LIT, "User:ops", Op.DESCRIBE, ALLOW),
    b(T, "shared", LIT, "User:*", Op.READ, ALLOW),
    b(T, "shared", LIT, "User:mallory", Op.ALL, DENY),
    b(T, "cfg", LIT, "User:admin2", Op.ALTER_CONFIGS, ALLOW),
    b(T, "hosty", LIT, "User:reader", Op.READ, ALLOW, host="10.0.0.1"),
    b(G, "app-", PRE, "User:reader", Op.READ, ALLOW),
    b(C, "kafka-cluster", LIT, "User:creator", Op.CREATE, ALLOW),
    b(T, "everything", LIT, "User:god", Op.ALL, ALLOW),
]

CASES = [
    # principal, host, op, type, name, expected
    ("User:reader", "1.2.3.4", Op.READ, T, "orders", True),
    ("User:reader", "1.2.3.4", Op.WRITE, T, "orders", False),  # read only
    ("User:reader", "1.2.3.4", Op.DESCRIBE, T, "orders", True),  # implied by Read
    ("User:reader", "1.2.3.4", Op.READ, T, "payments", False),  # no ACL: default deny
    ("User:reader", "1.2.3.4", Op.WRITE, T, "logs-app", True),  # prefixed
    ("User:reader", "1.2.3.4", Op.DESCRIBE, T, "logs-app", True),  # implied by Write
    ("User:reader", "1.2.3.4", Op.WRITE, T, "logs-secret", False),  # deny wins over prefix allow
    ("User:reader", "1.2.3.4", Op.WRITE, T, "log", False),  # shorter than the prefix
    ("User:ops", "1.2.3.4", Op.DESCRIBE, T, "orders", True),  # wildcard resource
    ("User:ops", "1.2.3.4", Op.READ, T, "orders", False),
    ("User:anyone", "1.2.3.4", Op.READ, T, "shared", True),  # wildcard principal
    ("User:mallory", "1.2.3.4", Op.READ, T, "shared", False),  # deny ALL wins over User:*
    ("User:mallory", "1.2.3.4", Op.DESCRIBE, T, "shared", False),
    ("User:admin2", "1.2.3.4", Op.DESCRIBE_CONFIGS, T, "cfg", True),  # implied by AlterConfigs
    ("User:admin2", "1.2.3.4", Op.DESCRIBE, T, "cfg", False),  # AlterConfigs does not imply it
    ("User:reader", "10.0.0.1", Op.READ, T, "hosty", True),
    ("User:reader", "10.0.0.2", Op.READ, T, "hosty", False),  # other host
    ("User:reader", "1.2.3.4", Op.READ, G, "app-1", True),
    ("User:reader", "1.2.3.4", Op.READ, T, "app-1", False),  # other resource type
    ("User:creator", "1.2.3.4", Op.CREATE, C, "kafka-cluster", True),
    ("User:reader", "1.2.3.4", Op.CREATE, C, "kafka-cluster", False),
    ("User:god", "1.2.3.4", Op.DELETE, T, "everything", True),  # ALL covers every operation
    ("User:admin", "1.2.3.4", Op.DELETE, T, "payments", True),  # super user
    ("User:admin", "1.2.3.4", Op.WRITE, T, "shared", True),
]


@pytest.mark.parametrize(("principal", "host", "op", "rtype", "name", "expected"), CASES)
def test_decision_table(principal, host, op, rtype, name, expected) -> None:
    authz = Authorizer(["User:admin"], bindings=BINDINGS)
    got = authz.authorize(KafkaPrincipal.parse(principal), host, op, rtype, name)
    assert got is expected


def test_allow_everyone_if_no_acl_found_only_where_no_acl_matches() -> None:
    authz = Authorizer(allow_everyone_if_no_acl_found=True, bindings=BINDINGS)
    someone = KafkaPrincipal.parse("User:someone")
    # The wildcard topic ACL of User:ops matches every topic, so use a group nobody names.
    assert authz.authorize(someone, "h", Op.READ, G, "unnamed-group")
    assert not authz.authorize(someone, "h", Op.WRITE, T, "unnamed-topic")
    assert not authz.authorize(someone, "h", Op.WRITE, T, "orders")  # ACLs exist for it


def test_update_replaces_bindings() -> None:
    authz = Authorizer(bindings=BINDINGS)
    reader = KafkaPrincipal.parse("User:reader")
    assert authz.authorize(reader, "h", Op.READ, T, "orders")
    authz.update([])
    assert not authz.authorize(reader, "h", Op.READ, T, "orders")
    assert authz.binding_count == 0


def test_filters() -> None:
    f = AclBindingFilter(resource_type=T, name="logs-secret", pattern_type=PatternType.MATCH)
    matched = [x for x in BINDINGS if f.matches(x)]
    assert {x.pattern.name for x in matched} == {"logs-", "logs-secret", "*"}
    f = AclBindingFilter(principal="User:reader", permission_type=DENY)
    assert [x.pattern.name for x in BINDINGS if f.matches(x)] == ["logs-secret"]
    assert all(AclBindingFilter().matches(x) for x in BINDINGS)
    f = AclBindingFilter(resource_type=T, name="logs-", pattern_type=LIT)
    assert not any(f.matches(x) for x in BINDINGS)


@pytest.mark.parametrize(
    "binding",
    [
        b(ResourceType.ANY, "x", LIT, "User:a", Op.READ, ALLOW),
        b(T, "x", PatternType.MATCH, "User:a", Op.READ, ALLOW),
        b(T, "", LIT, "User:a", Op.READ, ALLOW),
        b(C, "other", LIT, "User:a", Op.CREATE, ALLOW),
        b(T, "*", PRE, "User:a", Op.READ, ALLOW),
        b(T, "x", LIT, "alice", Op.READ, ALLOW),
        b(T, "x", LIT, "User:a", Op.ANY, ALLOW),
        b(T, "x", LIT, "User:a", Op.READ, AclPermissionType.ANY),
        b(T, "x", LIT, "User:a", Op.READ, ALLOW, host=""),
    ],
)
def test_invalid_bindings(binding: AclBinding) -> None:
    with pytest.raises(InvalidAclError):
        binding.validate()
    BINDINGS[0].validate()
