"""SecurityImage: SCRAM credentials, ACL bindings and client quotas as of one metadata offset,
and SecurityDelta, which replays the security records onto it (part of MetadataImage /
MetadataDelta).

Snapshot layout (the 7th item of a format-3 MetadataImage snapshot; every list sorted)::

    [scram:  [[user, mechanism, salt, stored_key, server_key, iterations], ...],
     acls:   [[id (16 bytes), resource_type, resource_name, pattern_type, principal, host,
               operation, permission_type], ...],
     quotas: [[user|nil, client_id|nil, [[key, value], ...]], ...]]

Replay never raises: a removal of something absent is skipped with a warning (identically on
every node), an ACL record with out-of-range enum values likewise.

Thread-safety: images are immutable; a delta belongs to one thread.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from common.security.acl import (
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    InvalidAclError,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from common.security.quota import QuotaEntity
from common.security.scram import ScramCredential, ScramMechanism
from metadata.records import (
    AccessControlEntryRecord,
    ClientQuotaRecord,
    MetadataRecord,
    RemoveAccessControlEntryRecord,
    RemoveUserScramCredentialRecord,
    UserScramCredentialRecord,
)

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class SecurityImage:
    # (user, mechanism) -> credential
    scram: Mapping[tuple[str, ScramMechanism], ScramCredential] = field(default_factory=dict)
    # ACL id -> binding
    acls: Mapping[uuid.UUID, AclBinding] = field(default_factory=dict)
    # (user, client_id) -> {quota key: value}; only non-empty maps are kept.
    quotas: Mapping[QuotaEntity, Mapping[str, float]] = field(default_factory=dict)

    def is_empty(self) -> bool:
        return not (self.scram or self.acls or self.quotas)

    def scram_credential(self, user: str, mechanism: ScramMechanism) -> ScramCredential | None:
        """A ``common.security.scram.CredentialLookup``."""
        return self.scram.get((user, mechanism))

    def users(self) -> dict[str, list[tuple[ScramMechanism, int]]]:
        """user -> [(mechanism, iterations)], sorted (what DescribeUserScramCredentials shows)."""
        out: dict[str, list[tuple[ScramMechanism, int]]] = {}
        for (user, mech), cred in sorted(self.scram.items()):
            out.setdefault(user, []).append((mech, cred.iterations))
        return out

    def acl_bindings(self) -> list[AclBinding]:
        return [b for _, b in sorted(self.acls.items())]

    # --- snapshot -------------------------------------------------------------------------------

    def encode_doc(self) -> list[Any]:
        scram = [
            [user, int(mech), c.salt, c.stored_key, c.server_key, c.iterations]
            for (user, mech), c in sorted(self.scram.items())
        ]
        acls = [
            [
                acl_id.bytes,
                int(b.pattern.resource_type),
                b.pattern.name,
                int(b.pattern.pattern_type),
                b.entry.principal,
                b.entry.host,
                int(b.entry.operation),
                int(b.entry.permission_type),
            ]
            for acl_id, b in sorted(self.acls.items())
        ]
        quotas = [
            [user, client, [[k, v] for k, v in sorted(values.items())]]
            for (user, client), values in sorted(
                self.quotas.items(), key=lambda kv: _entity_sort_key(kv[0])
            )
        ]
        return [scram, acls, quotas]

    @staticmethod
    def decode_doc(doc: Any) -> SecurityImage:
        """Inverse of :meth:`encode_doc`; ValueError/TypeError on malformed input."""
        raw_scram, raw_acls, raw_quotas = doc
        scram = {
            (str(user), ScramMechanism(int(mech))): ScramCredential(
                bytes(salt), bytes(stored), bytes(server), int(iterations)
            )
            for user, mech, salt, stored, server, iterations in raw_scram
        }
        acls = {}
        for raw_id, rtype, name, ptype, principal, host, op, perm in raw_acls:
            acls[uuid.UUID(bytes=bytes(raw_id))] = _binding(
                int(rtype), str(name), int(ptype), str(principal), str(host), int(op), int(perm)
            )
        quotas = {
            (_opt_str(user), _opt_str(client)): {str(k): float(v) for k, v in values}
            for user, client, values in raw_quotas
        }
        return SecurityImage(scram, acls, quotas)


def _entity_sort_key(entity: QuotaEntity) -> tuple[str, str, bool, bool]:
    user, client = entity
    return (user or "", client or "", user is None, client is None)


def _opt_str(value: Any) -> str | None:
    return None if value is None else str(value)


def _binding(
    rtype: int, name: str, ptype: int, principal: str, host: str, op: int, perm: int
) -> AclBinding:
    return AclBinding(
        ResourcePattern(ResourceType(rtype), name, PatternType(ptype)),
        AccessControlEntry(principal, host, AclOperation(op), AclPermissionType(perm)),
    )


def binding_of(record: AccessControlEntryRecord) -> AclBinding:
    """The binding an AccessControlEntryRecord stores; InvalidAclError if it is not valid."""
    try:
        binding = _binding(
            record.resource_type,
            record.resource_name,
            record.pattern_type,
            record.principal,
            record.host,
            record.operation,
            record.permission_type,
        )
    except ValueError as exc:  # an enum value this code does not know
        raise InvalidAclError(str(exc)) from None
    binding.validate()
    return binding


def record_of(acl_id: uuid.UUID, binding: AclBinding) -> AccessControlEntryRecord:
    p, e = binding.pattern, binding.entry
    return AccessControlEntryRecord(
        acl_id,
        int(p.resource_type),
        p.name,
        int(p.pattern_type),
        e.principal,
        e.host,
        int(e.operation),
        int(e.permission_type),
    )


class SecurityDelta:
    """Security records replayed on top of ``image``; ``apply()`` builds the next image,
    copying only the maps that changed."""

    def __init__(self, image: SecurityImage) -> None:
        self.image = image
        self._scram: dict[tuple[str, ScramMechanism], ScramCredential | None] = {}
        self._acls: dict[uuid.UUID, AclBinding | None] = {}
        self._quotas: dict[QuotaEntity, dict[str, float]] = {}

    @property
    def changed(self) -> bool:
        return bool(self._scram or self._acls or self._quotas)

    def replay(self, record: MetadataRecord) -> bool:
        """Apply one security record; False (logged) if it does not fit."""
        if isinstance(record, UserScramCredentialRecord):
            try:
                mech = ScramMechanism(record.mechanism)
            except ValueError:
                return _skip(record, f"unknown SCRAM mechanism {record.mechanism}")
            self._scram[(record.name, mech)] = ScramCredential(
                record.salt, record.stored_key, record.server_key, record.iterations
            )
            return True
        if isinstance(record, RemoveUserScramCredentialRecord):
            try:
                key = (record.name, ScramMechanism(record.mechanism))
            except ValueError:
                return _skip(record, f"unknown SCRAM mechanism {record.mechanism}")
            if self._current_scram(key) is None:
                return _skip(record, "no such credential")
            self._scram[key] = None
            return True
        if isinstance(record, AccessControlEntryRecord):
            try:
                binding = binding_of(record)
            except InvalidAclError as exc:
                return _skip(record, f"invalid ACL: {exc}")
            self._acls[record.id] = binding
            return True
        if isinstance(record, RemoveAccessControlEntryRecord):
            exists = (
                self._acls[record.id] is not None
                if record.id in self._acls
                else record.id in self.image.acls
            )
            if not exists:
                return _skip(record, "no such ACL")
            self._acls[record.id] = None
            return True
        if isinstance(record, ClientQuotaRecord):
            entity = (record.user, record.client_id)
            if entity == (None, None):
                return _skip(record, "a quota entity needs a user or a client id")
            values = self._quotas.get(entity)
            if values is None:
                values = dict(self.image.quotas.get(entity, {}))
                self._quotas[entity] = values
            if record.remove:
                values.pop(record.key, None)
            else:
                values[record.key] = record.value
            return True
        return _skip(record, "not a security record")

    def _current_scram(self, key: tuple[str, ScramMechanism]) -> ScramCredential | None:
        if key in self._scram:
            return self._scram[key]
        return self.image.scram.get(key)

    def apply(self) -> SecurityImage:
        if not self.changed:
            return self.image
        scram = self.image.scram
        if self._scram:
            scram = dict(scram)
            for key, cred in self._scram.items():
                if cred is None:
                    scram.pop(key, None)
                else:
                    scram[key] = cred
        acls = self.image.acls
        if self._acls:
            acls = dict(acls)
            for acl_id, binding in self._acls.items():
                if binding is None:
                    acls.pop(acl_id, None)
                else:
                    acls[acl_id] = binding
        quotas = self.image.quotas
        if self._quotas:
            quotas = dict(quotas)
            for entity, values in self._quotas.items():
                if values:
                    quotas[entity] = dict(values)
                else:
                    quotas.pop(entity, None)
        return SecurityImage(scram, acls, quotas)


def _skip(record: MetadataRecord, why: str) -> bool:
    logger.warning("skipping metadata record %s: %s", type(record).__name__, why)
    return False
