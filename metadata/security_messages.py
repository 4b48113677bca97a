"""Control-plane messages for the security state: SCRAM credentials, ACLs and client quotas
(Kafka's AlterUserScramCredentials, DescribeUserScramCredentials, CreateAcls, DescribeAcls,
DeleteAcls, AlterClientQuotas, DescribeClientQuotas), carried as msgpack maps by
metadata.wire. Enum fields hold Kafka's wire values (common.security.acl,
common.security.scram.ScramMechanism)."""

from __future__ import annotations

from dataclasses import dataclass, field

# --- SCRAM credentials -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ScramCredentialUpsertion:
    """As in Kafka, the client sends the salted password (never the password); the controller
    derives StoredKey and ServerKey and stores only those with the salt."""

    name: str
    mechanism: int
    iterations: int
    salt: bytes
    salted_password: bytes


@dataclass(frozen=True, slots=True)
class ScramCredentialDeletion:
    name: str
    mechanism: int


@dataclass(frozen=True, slots=True)
class AlterUserScramCredentialsRequest:
    deletions: list[ScramCredentialDeletion] = field(default_factory=list)
    upsertions: list[ScramCredentialUpsertion] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class AlterUserScramCredentialsResult:
    user: str
    error_code: int = 0
    error_message: str | None = None


@dataclass(frozen=True, slots=True)
class AlterUserScramCredentialsResponse:
    results: list[AlterUserScramCredentialsResult]


@dataclass(frozen=True, slots=True)
class DescribeUserScramCredentialsRequest:
    users: list[str] | None = None  # None: every user


@dataclass(frozen=True, slots=True)
class ScramCredentialInfo:
    mechanism: int
    iterations: int


@dataclass(frozen=True, slots=True)
class DescribeUserScramCredentialsResult:
    user: str
    error_code: int = 0
    error_message: str | None = None
    credential_infos: list[ScramCredentialInfo] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class DescribeUserScramCredentialsResponse:
    results: list[DescribeUserScramCredentialsResult]


# --- ACLs --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AclCreation:
    resource_type: int
    resource_name: str
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission_type: int


@dataclass(frozen=True, slots=True)
class CreateAclsRequest:
    creations: list[AclCreation]


@dataclass(frozen=True, slots=True)
class AclCreationResult:
    error_code: int = 0
    error_message: str | None = None


@dataclass(frozen=True, slots=True)
class CreateAclsResponse:
    results: list[AclCreationResult]


@dataclass(frozen=True, slots=True)
class AclFilter:
    """ANY (1) / None match every value; pattern_type MATCH (2) matches every pattern that
    covers ``resource_name``."""

    resource_type: int = 1
    resource_name: str | None = None
    pattern_type: int = 1
    principal: str | None = None
    host: str | None = None
    operation: int = 1
    permission_type: int = 1


@dataclass(frozen=True, slots=True)
class AclDescription:
    resource_type: int
    resource_name: str
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission_type: int


@dataclass(frozen=True, slots=True)
class DescribeAclsRequest:
    filter: AclFilter = field(default_factory=AclFilter)


@dataclass(frozen=True, slots=True)
class DescribeAclsResponse:
    error_code: int = 0
    error_message: str | None = None
    acls: list[AclDescription] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class DeleteAclsRequest:
    filters: list[AclFilter]


@dataclass(frozen=True, slots=True)
class DeleteAclsFilterResult:
    error_code: int = 0
    error_message: str | None = None
    matching_acls: list[AclDescription] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class DeleteAclsResponse:
    filter_results: list[DeleteAclsFilterResult]


# --- client quotas -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ClientQuotaEntity:
    """Each of ``user`` / ``client_id``: a name, ``<default>``, or None (not part of it)."""

    user: str | None = None
    client_id: str | None = None


@dataclass(frozen=True, slots=True)
class ClientQuotaOp:
    key: str
    value: float = 0.0
    remove: bool = False


@dataclass(frozen=True, slots=True)
class ClientQuotaAlteration:
    entity: ClientQuotaEntity
    ops: list[ClientQuotaOp]


@dataclass(frozen=True, slots=True)
class AlterClientQuotasRequest:
    entries: list[ClientQuotaAlteration]
    validate_only: bool = False


@dataclass(frozen=True, slots=True)
class AlterClientQuotasEntryResult:
    entity: ClientQuotaEntity
    error_code: int = 0
    error_message: str | None = None


@dataclass(frozen=True, slots=True)
class AlterClientQuotasResponse:
    entries: list[AlterClientQuotasEntryResult]


@dataclass(frozen=True, slots=True)
class DescribeClientQuotasRequest:
    """Entities whose user (client id) equals ``user`` (``client_id``); None matches any."""

    user: str | None = None
    client_id: str | None = None


@dataclass(frozen=True, slots=True)
class ClientQuotaEntry:
    entity: ClientQuotaEntity
    values: dict[str, float]


@dataclass(frozen=True, slots=True)
class DescribeClientQuotasResponse:
    entries: list[ClientQuotaEntry]
