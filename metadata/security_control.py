"""The controller's decisions on the security state (sans-IO): each function takes the
committed :class:`MetadataImage` and a request and returns a :class:`ControllerResult` (records
to append as one batch, response to send after they commit) or, for reads, the response.

Validation happens here, so only well-formed security records ever reach the log:
SCRAM upsertions need a known mechanism, iterations within Kafka's bounds and a salted password
of the mechanism's digest size (UNACCEPTABLE_CREDENTIAL otherwise); a user may not be both
deleted and upserted in one request (DUPLICATE_RESOURCE); ACL creations must be concrete
bindings (INVALID_REQUEST); quota keys must be producer_byte_rate, consumer_byte_rate or
request_percentage with a positive value, whole for the byte rates (INVALID_REQUEST).

Thread-safety: pure functions.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable

from common.error_codes import ErrorCode
from common.security.acl import (
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    InvalidAclError,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from common.security.quota import INTEGRAL_QUOTA_KEYS, QUOTA_KEYS
from common.security.scram import (
    MAX_ITERATIONS,
    MIN_ITERATIONS,
    ScramMechanism,
    credential_from_salted,
)
from metadata import security_messages as sm
from metadata.image import MetadataImage
from metadata.records import (
    ClientQuotaRecord,
    MetadataRecord,
    RemoveAccessControlEntryRecord,
    RemoveUserScramCredentialRecord,
    UserScramCredentialRecord,
)
from metadata.result import ControllerResult
from metadata.security_image import record_of

# Bounds on one request (each item becomes at least one record of one append).
MAX_ACL_CREATIONS_PER_REQUEST = 1000
MAX_ACL_DELETIONS_PER_REQUEST = 10_000
MAX_SCRAM_ALTERATIONS_PER_REQUEST = 1000
MAX_QUOTA_ALTERATIONS_PER_REQUEST = 1000
MAX_USERNAME_CHARS = 256


def _error(code: ErrorCode, message: str) -> tuple[int, str]:
    return int(code), message


# --- SCRAM -------------------------------------------------------------------------------------


def alter_user_scram_credentials(
    image: MetadataImage, request: sm.AlterUserScramCredentialsRequest
) -> ControllerResult[sm.AlterUserScramCredentialsResponse]:
    total = len(request.deletions) + len(request.upsertions)
    if total > MAX_SCRAM_ALTERATIONS_PER_REQUEST:
        too_many = [
            sm.AlterUserScramCredentialsResult(
                name, ErrorCode.POLICY_VIOLATION, "too many alterations in one request"
            )
            for name in [
                *(d.name for d in request.deletions),
                *(u.name for u in request.upsertions),
            ]
        ]
        return ControllerResult.of([], sm.AlterUserScramCredentialsResponse(too_many))
    deleted = {d.name for d in request.deletions}
    upserted = {u.name for u in request.upsertions}
    both = deleted & upserted
    errors: dict[str, tuple[int, str]] = {}
    records_by_user: dict[str, list[MetadataRecord]] = {}
    seen: set[tuple[str, int]] = set()
    for d in request.deletions:
        if d.name in both:
            errors[d.name] = _error(
                ErrorCode.DUPLICATE_RESOURCE, "a user cannot be deleted and upserted at once"
            )
            continue
        err = _check_name_and_mechanism(d.name, d.mechanism)
        if err is None and (d.name, d.mechanism) in seen:
            err = _error(ErrorCode.DUPLICATE_RESOURCE, "the same credential appears twice")
        if err is None and image.security.scram.get((d.name, ScramMechanism(d.mechanism))) is None:
            err = _error(
                ErrorCode.RESOURCE_NOT_FOUND,
                f"no {ScramMechanism(d.mechanism).mechanism_name} credential for {d.name}",
            )
        if err is not None:
            errors.setdefault(d.name, err)
            continue
        seen.add((d.name, d.mechanism))
        records_by_user.setdefault(d.name, []).append(
            RemoveUserScramCredentialRecord(d.name, d.mechanism)
        )
    for u in request.upsertions:
        if u.name in both:
            errors[u.name] = _error(
                ErrorCode.DUPLICATE_RESOURCE, "a user cannot be deleted and upserted at once"
            )
            continue
        err = _check_upsertion(u)
        if err is None and (u.name, u.mechanism) in seen:
            err = _error(ErrorCode.DUPLICATE_RESOURCE, "the same credential appears twice")
        if err is not None:
            errors.setdefault(u.name, err)
            continue
        seen.add((u.name, u.mechanism))
        mech = ScramMechanism(u.mechanism)
        cred = credential_from_salted(mech, u.salted_password, u.salt, u.iterations)
        records_by_user.setdefault(u.name, []).append(
            UserScramCredentialRecord(
                u.name, int(mech), cred.salt, cred.stored_key, cred.server_key, cred.iterations
            )
        )
    records: list[MetadataRecord] = []
    results = []
    for name in dict.fromkeys([*(d.name for d in request.deletions), *upserted]):
        if name in errors:
            code, message = errors[name]
            results.append(sm.AlterUserScramCredentialsResult(name, code, message))
        else:
            # A user's alterations are all or nothing, as in Kafka.
            records.extend(records_by_user.get(name, []))
            results.append(sm.AlterUserScramCredentialsResult(name))
    return ControllerResult.of(records, sm.AlterUserScramCredentialsResponse(results))


def _check_name_and_mechanism(name: str, mechanism: int) -> tuple[int, str] | None:
    if not name or len(name) > MAX_USERNAME_CHARS:
        return _error(ErrorCode.UNACCEPTABLE_CREDENTIAL, "user name empty or too long")
    if mechanism not in {int(m) for m in ScramMechanism}:
        return _error(ErrorCode.UNSUPPORTED_SASL_MECHANISM, f"unknown SCRAM mechanism {mechanism}")
    return None


def _check_upsertion(u: sm.ScramCredentialUpsertion) -> tuple[int, str] | None:
    err = _check_name_and_mechanism(u.name, u.mechanism)
    if err is not None:
        return err
    if not MIN_ITERATIONS <= u.iterations <= MAX_ITERATIONS:
        return _error(
            ErrorCode.UNACCEPTABLE_CREDENTIAL,
            f"iterations must be between {MIN_ITERATIONS} and {MAX_ITERATIONS}",
        )
    if not u.salt:
        return _error(ErrorCode.UNACCEPTABLE_CREDENTIAL, "the salt must not be empty")
    digest_size = hashlib.new(ScramMechanism(u.mechanism).hash_name).digest_size
    if len(u.salted_password) != digest_size:
        return _error(
            ErrorCode.UNACCEPTABLE_CREDENTIAL,
            f"the salted password must be {digest_size} bytes",
        )
    return None


def describe_user_scram_credentials(
    image: MetadataImage, request: sm.DescribeUserScramCredentialsRequest
) -> sm.DescribeUserScramCredentialsResponse:
    users = image.security.users()
    names = sorted(users) if request.users is None else list(dict.fromkeys(request.users))
    results = []
    for name in names:
        infos = users.get(name)
        if infos is None:
            results.append(
                sm.DescribeUserScramCredentialsResult(
                    name, ErrorCode.RESOURCE_NOT_FOUND, f"no SCRAM credential for {name}"
                )
            )
        else:
            results.append(
                sm.DescribeUserScramCredentialsResult(
                    name,
                    credential_infos=[sm.ScramCredentialInfo(int(m), i) for m, i in infos],
                )
            )
    return sm.DescribeUserScramCredentialsResponse(results)


# --- ACLs --------------------------------------------------------------------------------------


def binding_from_creation(c: sm.AclCreation) -> AclBinding:
    """InvalidAclError for unknown enum values or non-concrete bindings."""
    try:
        binding = AclBinding(
            ResourcePattern(
                ResourceType(c.resource_type), c.resource_name, PatternType(c.pattern_type)
            ),
            AccessControlEntry(
                c.principal,
                c.host,
                AclOperation(c.operation),
                AclPermissionType(c.permission_type),
            ),
        )
    except ValueError as exc:
        raise InvalidAclError(str(exc)) from None
    binding.validate()
    return binding


def describe_binding(b: AclBinding) -> sm.AclDescription:
    return sm.AclDescription(
        int(b.pattern.resource_type),
        b.pattern.name,
        int(b.pattern.pattern_type),
        b.entry.principal,
        b.entry.host,
        int(b.entry.operation),
        int(b.entry.permission_type),
    )


def filter_from_message(f: sm.AclFilter) -> AclBindingFilter:
    try:
        return AclBindingFilter(
            ResourceType(f.resource_type),
            f.resource_name,
            PatternType(f.pattern_type),
            f.principal,
            f.host,
            AclOperation(f.operation),
            AclPermissionType(f.permission_type),
        )
    except ValueError as exc:
        raise InvalidAclError(str(exc)) from None


def create_acls(
    image: MetadataImage, request: sm.CreateAclsRequest, new_id: Callable[[], uuid.UUID]
) -> ControllerResult[sm.CreateAclsResponse]:
    if len(request.creations) > MAX_ACL_CREATIONS_PER_REQUEST:
        results = [
            sm.AclCreationResult(ErrorCode.POLICY_VIOLATION, "too many ACLs in one request")
        ] * len(request.creations)
        return ControllerResult.of([], sm.CreateAclsResponse(results))
    existing = set(image.security.acls.values())
    records: list[MetadataRecord] = []
    results = []
    for creation in request.creations:
        try:
            binding = binding_from_creation(creation)
        except InvalidAclError as exc:
            results.append(sm.AclCreationResult(ErrorCode.INVALID_REQUEST, str(exc)))
            continue
        if binding not in existing:  # creating an existing binding succeeds and adds nothing
            existing.add(binding)
            acl_id = new_id()
            while acl_id in image.security.acls:
                acl_id = new_id()
            records.append(record_of(acl_id, binding))
        results.append(sm.AclCreationResult())
    return ControllerResult.of(records, sm.CreateAclsResponse(results))


def describe_acls(image: MetadataImage, request: sm.DescribeAclsRequest) -> sm.DescribeAclsResponse:
    try:
        flt = filter_from_message(request.filter)
    except InvalidAclError as exc:
        return sm.DescribeAclsResponse(ErrorCode.INVALID_REQUEST, str(exc))
    acls = [describe_binding(b) for b in image.security.acl_bindings() if flt.matches(b)]
    return sm.DescribeAclsResponse(acls=acls)


def delete_acls(
    image: MetadataImage, request: sm.DeleteAclsRequest
) -> ControllerResult[sm.DeleteAclsResponse]:
    removed: set[uuid.UUID] = set()
    records: list[MetadataRecord] = []
    results = []
    for f in request.filters:
        try:
            flt = filter_from_message(f)
        except InvalidAclError as exc:
            results.append(sm.DeleteAclsFilterResult(ErrorCode.INVALID_REQUEST, str(exc)))
            continue
        matched = []
        for acl_id, binding in sorted(image.security.acls.items()):
            if flt.matches(binding):
                matched.append(describe_binding(binding))
                if acl_id not in removed and len(removed) < MAX_ACL_DELETIONS_PER_REQUEST:
                    removed.add(acl_id)
                    records.append(RemoveAccessControlEntryRecord(acl_id))
        results.append(sm.DeleteAclsFilterResult(matching_acls=matched))
    return ControllerResult.of(records, sm.DeleteAclsResponse(results))


# --- client quotas -----------------------------------------------------------------------------


def alter_client_quotas(
    image: MetadataImage, request: sm.AlterClientQuotasRequest
) -> ControllerResult[sm.AlterClientQuotasResponse]:
    records: list[MetadataRecord] = []
    results = []
    if len(request.entries) > MAX_QUOTA_ALTERATIONS_PER_REQUEST:
        results = [
            sm.AlterClientQuotasEntryResult(e.entity, ErrorCode.POLICY_VIOLATION, "too many")
            for e in request.entries
        ]
        return ControllerResult.of([], sm.AlterClientQuotasResponse(results))
    for entry in request.entries:
        entity = entry.entity
        error = _check_quota_entry(entry)
        if error is not None:
            results.append(
                sm.AlterClientQuotasEntryResult(entity, ErrorCode.INVALID_REQUEST, error)
            )
            continue
        if not request.validate_only:
            for op in entry.ops:
                records.append(
                    ClientQuotaRecord(
                        entity.user,
                        entity.client_id,
                        op.key,
                        0.0 if op.remove else op.value,
                        op.remove,
                    )
                )
        results.append(sm.AlterClientQuotasEntryResult(entity))
    return ControllerResult.of(records, sm.AlterClientQuotasResponse(results))


def _check_quota_entry(entry: sm.ClientQuotaAlteration) -> str | None:
    entity = entry.entity
    if entity.user is None and entity.client_id is None:
        return "a quota entity needs a user, a client id or both"
    if entity.user == "" or entity.client_id == "":
        return "entity names must not be empty (use <default> for the default entity)"
    keys = set()
    for op in entry.ops:
        if op.key not in QUOTA_KEYS:
            return f"unknown quota {op.key!r}; known: {', '.join(QUOTA_KEYS)}"
        if op.key in keys:
            return f"quota {op.key} appears twice"
        keys.add(op.key)
        if not op.remove and not op.value > 0:
            return f"quota {op.key} must be positive, got {op.value}"
        # Kafka types the byte rates as longs and refuses a fraction (a share of one byte).
        if not op.remove and op.key in INTEGRAL_QUOTA_KEYS and abs(op.value % 1.0) > 1e-6:
            return f"{op.key} cannot be a fractional value."
    return None


def describe_client_quotas(
    image: MetadataImage, request: sm.DescribeClientQuotasRequest
) -> sm.DescribeClientQuotasResponse:
    entries = []
    for (user, client_id), values in image.security.quotas.items():
        if request.user is not None and user != request.user:
            continue
        if request.client_id is not None and client_id != request.client_id:
            continue
        entries.append(sm.ClientQuotaEntry(sm.ClientQuotaEntity(user, client_id), dict(values)))
    entries.sort(key=lambda e: (e.entity.user or "", e.entity.client_id or ""))
    return sm.DescribeClientQuotasResponse(entries)
