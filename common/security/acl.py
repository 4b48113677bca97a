"""ACL bindings and the Authorizer, with Kafka's semantics (AclAuthorizer / StandardAuthorizer).

A binding = a resource pattern (type, name, LITERAL or PREFIXED) + an access control entry
(principal, host, operation, ALLOW or DENY). Enum values are Kafka's wire values
(ResourceType, PatternType, AclOperation, AclPermissionType), so they can travel unchanged in
CreateAcls / DescribeAcls and in the metadata log.

Decision for (principal, host, operation, resource):

1. a principal named in ``super.users`` is allowed everything;
2. the *matching* bindings are those whose pattern covers the resource: LITERAL with the same
   name, LITERAL ``*`` (every resource of the type), PREFIXED with a name the resource starts
   with. Without any matching binding (for any principal), the answer is
   ``allow.everyone.if.no.acl.found`` (default false);
3. a matching DENY for the principal (or ``User:*``), host (or ``*``) and the operation (or
   ALL) denies: deny wins over any allow;
4. otherwise a matching ALLOW is needed, where Describe is implied by Read, Write, Delete and
   Alter, and DescribeConfigs by AlterConfigs (as in Kafka).

Thread-safety: :meth:`Authorizer.update` builds a new immutable index and swaps one reference,
so :meth:`Authorizer.authorize` may run on any thread concurrently without a lock.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass

from common.security.principal import WILDCARD_NAME, KafkaPrincipal

WILDCARD_RESOURCE = "*"
WILDCARD_HOST = "*"
WILDCARD_PRINCIPAL = f"User:{WILDCARD_NAME}"
# The single cluster resource's name, as Kafka names it.
CLUSTER_RESOURCE_NAME = "kafka-cluster"


class ResourceType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6


class PatternType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclOperation(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12


class AclPermissionType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


# Operations that imply another one when ALLOWED (never when denied), as in Kafka.
_IMPLIED_BY: dict[AclOperation, frozenset[AclOperation]] = {
    AclOperation.DESCRIBE: frozenset(
        {
            AclOperation.DESCRIBE,
            AclOperation.READ,
            AclOperation.WRITE,
            AclOperation.DELETE,
            AclOperation.ALTER,
        }
    ),
    AclOperation.DESCRIBE_CONFIGS: frozenset(
        {AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS}
    ),
}

# Which concrete values a binding may hold (ANY/MATCH/UNKNOWN only appear in filters).
CONCRETE_RESOURCE_TYPES = frozenset(
    {ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER, ResourceType.TRANSACTIONAL_ID}
)
CONCRETE_PATTERN_TYPES = frozenset({PatternType.LITERAL, PatternType.PREFIXED})
CONCRETE_OPERATIONS = frozenset(op for op in AclOperation if op >= AclOperation.ALL)
CONCRETE_PERMISSIONS = frozenset({AclPermissionType.DENY, AclPermissionType.ALLOW})
# The operations that apply to the cluster resource (Kafka's ResourceType.CLUSTER), for the
# authorized-operations bitfields of DescribeCluster and Metadata.
CLUSTER_OPERATIONS = (
    AclOperation.CREATE,
    AclOperation.ALTER,
    AclOperation.DESCRIBE,
    AclOperation.CLUSTER_ACTION,
    AclOperation.DESCRIBE_CONFIGS,
    AclOperation.ALTER_CONFIGS,
    AclOperation.IDEMPOTENT_WRITE,
)


# The operations that apply to a topic (Kafka's ResourceType.TOPIC), for Metadata's
# topic authorized operations.
TOPIC_OPERATIONS = (
    AclOperation.READ,
    AclOperation.WRITE,
    AclOperation.CREATE,
    AclOperation.DELETE,
    AclOperation.ALTER,
    AclOperation.DESCRIBE,
    AclOperation.DESCRIBE_CONFIGS,
    AclOperation.ALTER_CONFIGS,
)


def operations_bitfield(operations: Iterable[AclOperation]) -> int:
    """Kafka's authorized-operations bitfield: bit ``op`` set for each operation."""
    bits = 0
    for op in operations:
        bits |= 1 << int(op)
    return bits


class InvalidAclError(ValueError):
    """A binding that cannot be stored (a filter value, an empty name, a cluster resource not
    named ``kafka-cluster``, a principal without a type)."""


@dataclass(frozen=True, slots=True)
class ResourcePattern:
    resource_type: ResourceType
    name: str
    pattern_type: PatternType = PatternType.LITERAL


@dataclass(frozen=True, slots=True)
class AccessControlEntry:
    principal: str  # "User:alice" or "User:*"
    host: str  # an IP address or "*"
    operation: AclOperation
    permission_type: AclPermissionType


@dataclass(frozen=True, slots=True)
class AclBinding:
    pattern: ResourcePattern
    entry: AccessControlEntry

    def validate(self) -> None:
        p, e = self.pattern, self.entry
        if p.resource_type not in CONCRETE_RESOURCE_TYPES:
            raise InvalidAclError(f"resource type {p.resource_type!r} cannot be stored")
        if p.pattern_type not in CONCRETE_PATTERN_TYPES:
            raise InvalidAclError(f"pattern type {p.pattern_type!r} cannot be stored")
        if not p.name:
            raise InvalidAclError("resource name must not be empty")
        if p.resource_type is ResourceType.CLUSTER and p.name != CLUSTER_RESOURCE_NAME:
            raise InvalidAclError(f"the cluster resource is named {CLUSTER_RESOURCE_NAME!r}")
        if p.pattern_type is PatternType.PREFIXED and p.name == WILDCARD_RESOURCE:
            raise InvalidAclError("a PREFIXED pattern cannot be the wildcard '*'")
        if e.operation not in CONCRETE_OPERATIONS:
            raise InvalidAclError(f"operation {e.operation!r} cannot be stored")
        if e.permission_type not in CONCRETE_PERMISSIONS:
            raise InvalidAclError(f"permission {e.permission_type!r} cannot be stored")
        if not e.host:
            raise InvalidAclError("host must not be empty (use '*' for every host)")
        try:
            KafkaPrincipal.parse(e.principal)
        except ValueError as exc:
            raise InvalidAclError(str(exc)) from None


@dataclass(frozen=True, slots=True)
class AclBindingFilter:
    """Matches bindings for DescribeAcls / DeleteAcls: ANY (or None) matches every value;
    pattern type MATCH matches every pattern that would cover ``name`` (literal, wildcard and
    prefixes)."""

    resource_type: ResourceType = ResourceType.ANY
    name: str | None = None
    pattern_type: PatternType = PatternType.ANY
    principal: str | None = None
    host: str | None = None
    operation: AclOperation = AclOperation.ANY
    permission_type: AclPermissionType = AclPermissionType.ANY

    def matches(self, binding: AclBinding) -> bool:
        p, e = binding.pattern, binding.entry
        if self.resource_type is not ResourceType.ANY and p.resource_type != self.resource_type:
            return False
        if self.pattern_type is PatternType.MATCH:
            if self.name is not None and not _covers(p, self.name):
                return False
        else:
            if self.pattern_type is not PatternType.ANY and p.pattern_type != self.pattern_type:
                return False
            if self.name is not None and p.name != self.name:
                return False
        if self.principal is not None and e.principal != self.principal:
            return False
        if self.host is not None and e.host != self.host:
            return False
        if self.operation is not AclOperation.ANY and e.operation != self.operation:
            return False
        return not (
            self.permission_type is not AclPermissionType.ANY
            and e.permission_type != self.permission_type
        )


def _covers(pattern: ResourcePattern, name: str) -> bool:
    if pattern.pattern_type is PatternType.PREFIXED:
        return name.startswith(pattern.name)
    return pattern.name == name or pattern.name == WILDCARD_RESOURCE


class _AclIndex:
    """Bindings grouped by resource type, then LITERAL name; PREFIXED kept as a list (few)."""

    def __init__(self, bindings: Iterable[AclBinding]) -> None:
        self.literal: dict[ResourceType, dict[str, list[AccessControlEntry]]] = {}
        self.prefixed: dict[ResourceType, list[tuple[str, AccessControlEntry]]] = {}
        self.count = 0
        for b in bindings:
            self.count += 1
            rtype = b.pattern.resource_type
            if b.pattern.pattern_type is PatternType.PREFIXED:
                self.prefixed.setdefault(rtype, []).append((b.pattern.name, b.entry))
            else:
                self.literal.setdefault(rtype, {}).setdefault(b.pattern.name, []).append(b.entry)

    def matching(self, rtype: ResourceType, name: str) -> list[AccessControlEntry]:
        out: list[AccessControlEntry] = []
        by_name = self.literal.get(rtype)
        if by_name:
            out.extend(by_name.get(name, ()))
            if name != WILDCARD_RESOURCE:
                out.extend(by_name.get(WILDCARD_RESOURCE, ()))
        for prefix, entry in self.prefixed.get(rtype, ()):
            if name.startswith(prefix):
                out.append(entry)
        return out


def _entry_applies(
    entry: AccessControlEntry, principal: str, host: str, operations: frozenset[AclOperation]
) -> bool:
    return (
        (entry.principal == principal or entry.principal == WILDCARD_PRINCIPAL)
        and (entry.host == host or entry.host == WILDCARD_HOST)
        and (entry.operation in operations or entry.operation is AclOperation.ALL)
    )


class Authorizer:
    """Decides requests against the current ACL bindings (see the module docstring)."""

    def __init__(
        self,
        super_users: Iterable[str] = (),
        *,
        allow_everyone_if_no_acl_found: bool = False,
        bindings: Iterable[AclBinding] = (),
    ) -> None:
        self.super_users = frozenset(super_users)
        self.allow_everyone_if_no_acl_found = allow_everyone_if_no_acl_found
        self._index = _AclIndex(bindings)

    def update(self, bindings: Iterable[AclBinding]) -> None:
        """Replace every binding (called when the metadata image changes)."""
        self._index = _AclIndex(bindings)

    @property
    def binding_count(self) -> int:
        return self._index.count

    def authorize(
        self,
        principal: KafkaPrincipal,
        host: str,
        operation: AclOperation,
        resource_type: ResourceType,
        resource_name: str,
    ) -> bool:
        name = str(principal)
        if name in self.super_users:
            return True
        entries = self._index.matching(resource_type, resource_name)
        if not entries:
            return self.allow_everyone_if_no_acl_found
        single = frozenset({operation})
        for e in entries:
            if e.permission_type is AclPermissionType.DENY and _entry_applies(
                e, name, host, single
            ):
                return False
        allowed_by = _IMPLIED_BY.get(operation, single)
        return any(
            e.permission_type is AclPermissionType.ALLOW
            and _entry_applies(e, name, host, allowed_by)
            for e in entries
        )

    def authorize_any(
        self,
        principal: KafkaPrincipal,
        host: str,
        operation: AclOperation,
        resource_type: ResourceType,
    ) -> bool:
        """Whether ``principal`` may perform ``operation`` on SOME resource of the type (Kafka's
        authorizeByResourceType, used for InitProducerId without IdempotentWrite): a DENY for
        every resource (LITERAL ``*``) refuses; otherwise any matching ALLOW binding grants."""
        name = str(principal)
        if name in self.super_users:
            return True
        index = self._index
        literal = index.literal.get(resource_type, {})
        wildcard = literal.get(WILDCARD_RESOURCE, ())
        single = frozenset({operation})
        for e in wildcard:
            if e.permission_type is AclPermissionType.DENY and _entry_applies(
                e, name, host, single
            ):
                return False
        allowed_by = _IMPLIED_BY.get(operation, single)
        entries = [e for entries in literal.values() for e in entries]
        entries += [e for _, e in index.prefixed.get(resource_type, ())]
        if not entries:
            return self.allow_everyone_if_no_acl_found
        return any(
            e.permission_type is AclPermissionType.ALLOW
            and _entry_applies(e, name, host, allowed_by)
            for e in entries
        )
