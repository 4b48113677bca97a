"""Client calls for the security state on a :class:`metadata.client.ControllerClient`
(used by ``kraftlog users|acls|quotas`` and by tests).

``set_scram_password`` salts and hashes the password on the caller's side, as Kafka's
AdminClient does: only the salt and the salted password cross the wire (over mutual TLS when
the control plane has it), and the controller stores derived keys only.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence

from common.security.scram import (
    DEFAULT_ITERATIONS,
    SALT_BYTES,
    ScramMechanism,
    check_iterations,
    salted_password,
)
from metadata import security_messages as sm
from metadata.client import ControllerClient


def set_scram_password(
    client: ControllerClient,
    user: str,
    password: str,
    mechanisms: Sequence[ScramMechanism] = tuple(ScramMechanism),
    *,
    iterations: int = DEFAULT_ITERATIONS,
) -> list[sm.AlterUserScramCredentialsResult]:
    """Create or replace ``user``'s credentials for every mechanism in ``mechanisms``."""
    check_iterations(iterations)
    if not password:
        raise ValueError("the password must not be empty")
    upsertions = []
    for mech in mechanisms:
        salt = secrets.token_bytes(SALT_BYTES)
        upsertions.append(
            sm.ScramCredentialUpsertion(
                user, int(mech), iterations, salt, salted_password(mech, password, salt, iterations)
            )
        )
    request = sm.AlterUserScramCredentialsRequest(upsertions=upsertions)
    return client.call(
        "AlterUserScramCredentials", request, sm.AlterUserScramCredentialsResponse
    ).results


def delete_scram_credentials(
    client: ControllerClient, user: str, mechanisms: Sequence[ScramMechanism]
) -> list[sm.AlterUserScramCredentialsResult]:
    deletions = [sm.ScramCredentialDeletion(user, int(m)) for m in mechanisms]
    request = sm.AlterUserScramCredentialsRequest(deletions=deletions)
    return client.call(
        "AlterUserScramCredentials", request, sm.AlterUserScramCredentialsResponse
    ).results


def describe_scram_credentials(
    client: ControllerClient, users: Sequence[str] | None = None
) -> list[sm.DescribeUserScramCredentialsResult]:
    request = sm.DescribeUserScramCredentialsRequest(None if users is None else list(users))
    return client.call(
        "DescribeUserScramCredentials", request, sm.DescribeUserScramCredentialsResponse
    ).results


def create_acls(
    client: ControllerClient, creations: Sequence[sm.AclCreation]
) -> list[sm.AclCreationResult]:
    return client.call(
        "CreateAcls", sm.CreateAclsRequest(list(creations)), sm.CreateAclsResponse
    ).results


def describe_acls(
    client: ControllerClient, acl_filter: sm.AclFilter | None = None
) -> sm.DescribeAclsResponse:
    return client.call(
        "DescribeAcls",
        sm.DescribeAclsRequest(acl_filter or sm.AclFilter()),
        sm.DescribeAclsResponse,
    )


def delete_acls(
    client: ControllerClient, filters: Sequence[sm.AclFilter]
) -> list[sm.DeleteAclsFilterResult]:
    return client.call(
        "DeleteAcls", sm.DeleteAclsRequest(list(filters)), sm.DeleteAclsResponse
    ).filter_results


def alter_client_quotas(
    client: ControllerClient,
    entries: Sequence[sm.ClientQuotaAlteration],
    *,
    validate_only: bool = False,
) -> list[sm.AlterClientQuotasEntryResult]:
    return client.call(
        "AlterClientQuotas",
        sm.AlterClientQuotasRequest(list(entries), validate_only),
        sm.AlterClientQuotasResponse,
    ).entries


def describe_client_quotas(
    client: ControllerClient, user: str | None = None, client_id: str | None = None
) -> list[sm.ClientQuotaEntry]:
    request = sm.DescribeClientQuotasRequest(user, client_id)
    return client.call("DescribeClientQuotas", request, sm.DescribeClientQuotasResponse).entries
