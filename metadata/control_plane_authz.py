"""ACLs on the controllers' gRPC control plane (mutual TLS), as Kafka's controllers apply them.

The principal of an RPC is ``User:<subject DN of the client certificate>`` (most specific RDN
first, e.g. ``User:CN=admin,O=kraftlog development``): the same name an SSL listener gives the
same certificate (:func:`common.security.principal.build_principal`), so one ACL serves
both. Without a verified certificate the principal is ``User:ANONYMOUS``.

Each RPC needs (Kafka's mapping, ControllerApis / KafkaApis):

=================================================  ===========================================
RegisterBroker, BrokerHeartbeat, AlterPartition,   ClusterAction on the cluster
AllocateProducerIds, FetchMetadata (the log holds
salted credentials)
CreateTopics                                       Create on the cluster, or Create on each topic
DeleteTopics                                       Delete on each topic
CreatePartitions                                   Alter on each topic
AlterConfigs, IncrementalAlterConfigs              AlterConfigs on each topic / the cluster
DescribeConfigs                                    DescribeConfigs on each topic / the cluster
ElectLeaders, AlterPartitionReassignments,         Alter on the cluster
CreateAcls, DeleteAcls, AlterUserScramCredentials,
UpdateFeatures, AddRaftVoter, RemoveRaftVoter
AlterClientQuotas                                  AlterConfigs on the cluster
DescribeCluster, QuorumStatus, DescribeAcls,       Describe on the cluster
DescribeUserScramCredentials,
ListPartitionReassignments, DescribeFeatures,
DescribeQuorum
DescribeClientQuotas                               DescribeConfigs on the cluster
=================================================  ===========================================

A refusal names the first resource denied: TOPIC_AUTHORIZATION_FAILED for a topic,
CLUSTER_AUTHORIZATION_FAILED for the cluster; the whole RPC is refused (no partial success).
Principals in ``super.users`` and the controller's own certificate principal pass everything;
brokers therefore need their certificate's principal in ``super.users`` (or a ClusterAction
ACL), as in Kafka.

Thread-safety: :meth:`ControlPlaneAuthorizer.check` runs on gRPC worker threads; the ACL index
is rebuilt when the image's ACL mapping object changes (images are immutable) and swapped
under a lock.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from cryptography import x509
from cryptography.x509.oid import NameOID

from common.config_resources import RESOURCE_TOPIC
from common.error_codes import ErrorCode
from common.security.acl import (
    CLUSTER_RESOURCE_NAME,
    AclBinding,
    AclOperation,
    Authorizer,
    ResourceType,
)
from common.security.config import SecurityConfig
from common.security.pem_files import pem_bytes
from common.security.principal import ANONYMOUS, KafkaPrincipal, user
from metadata import messages as m

_CLUSTER_ACTION = frozenset(
    {
        "RegisterBroker",
        "BrokerHeartbeat",
        "BrokerSession",
        "AlterPartition",
        "AllocateProducerIds",
        "FetchMetadata",
    }
)
_ALTER_CLUSTER = frozenset(
    {
        "ElectLeaders",
        "AlterPartitionReassignments",
        "CreateAcls",
        "DeleteAcls",
        "AlterUserScramCredentials",
        "UpdateFeatures",
        "AddRaftVoter",
        "RemoveRaftVoter",
    }
)
_DESCRIBE_CLUSTER = frozenset(
    {
        "DescribeCluster",
        "QuorumStatus",
        "DescribeAcls",
        "DescribeUserScramCredentials",
        "ListPartitionReassignments",
        "DescribeFeatures",
        "DescribeQuorum",
    }
)

# The short names cryptography gives RDN attributes, as Java's X500Principal writes them.
_DN_KEYS = {
    NameOID.COMMON_NAME: "CN",
    NameOID.ORGANIZATION_NAME: "O",
    NameOID.ORGANIZATIONAL_UNIT_NAME: "OU",
    NameOID.COUNTRY_NAME: "C",
    NameOID.LOCALITY_NAME: "L",
    NameOID.STATE_OR_PROVINCE_NAME: "ST",
}


def principal_from_pem(pem: bytes | None) -> KafkaPrincipal:
    """``User:<subject DN>`` of a PEM certificate (as grpc's auth context holds the peer's);
    ANONYMOUS without one."""
    if not pem:
        return ANONYMOUS
    try:
        cert = x509.load_pem_x509_certificate(pem)
    except ValueError:
        return ANONYMOUS
    dn = cert.subject.rfc4514_string(_DN_KEYS)
    return user(dn) if dn else ANONYMOUS


def principal_of_context(auth_context: Mapping[str, Iterable[bytes]]) -> KafkaPrincipal:
    """The principal of a gRPC call from ``ServicerContext.auth_context()``."""
    pems = list(auth_context.get("x509_pem_cert", ()))
    return principal_from_pem(pems[0] if pems else None)


def host_of_peer(peer: str) -> str:
    """The client address of ``ServicerContext.peer()`` (``ipv4:10.0.0.1:5123``,
    ``ipv6:[::1]:5123``); ``*`` (matches only host-wildcard ACLs) if it has another form."""
    kind, _, rest = peer.partition(":")
    if kind == "ipv4":
        return rest.rpartition(":")[0] or "*"
    if kind == "ipv6":
        return rest.rpartition(":")[0].strip("[]") or "*"
    return "*"


@dataclass(frozen=True, slots=True)
class Refusal:
    error_code: int
    message: str


class ControlPlaneAuthorizer:
    """See the module docstring. ``own_principal`` is this controller's certificate principal;
    :meth:`check` takes the current image's ACL mapping (one immutable object per version)."""

    def __init__(
        self,
        super_users: Iterable[str],
        *,
        allow_everyone_if_no_acl_found: bool = False,
        own_principal: KafkaPrincipal | None = None,
    ) -> None:
        supers = set(super_users)
        if own_principal is not None:
            supers.add(str(own_principal))
        self._super_users = frozenset(supers)
        self._allow_everyone = allow_everyone_if_no_acl_found
        self._lock = threading.Lock()
        self._seen: Mapping[Any, AclBinding] | None = None
        self._authorizer = Authorizer(
            self._super_users, allow_everyone_if_no_acl_found=allow_everyone_if_no_acl_found
        )

    def _current(self, acls: Mapping[Any, AclBinding]) -> Authorizer:
        with self._lock:
            if acls is not self._seen:
                self._authorizer = Authorizer(
                    self._super_users,
                    allow_everyone_if_no_acl_found=self._allow_everyone,
                    bindings=[b for _, b in sorted(acls.items())],
                )
                self._seen = acls
            return self._authorizer

    def check(
        self,
        rpc: str,
        request: Any,
        principal: KafkaPrincipal,
        acls: Mapping[Any, AclBinding],
        host: str = "*",
    ) -> Refusal | None:
        """None if ``principal`` (calling from ``host``) may call ``rpc`` with ``request``
        under ``acls``; else why not."""
        if str(principal) in self._super_users:
            return None
        rule = _RULES.get(rpc)
        if rule is None:
            # An RPC the table does not know is refused rather than let through.
            return Refusal(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, f"no ACL rule for {rpc}")
        return rule(_Caller(self._current(acls), principal, host, rpc), request)


@dataclass(frozen=True, slots=True)
class _Caller:
    """One RPC call under the ACL index of the image it is checked against."""

    authz: Authorizer
    principal: KafkaPrincipal
    host: str
    rpc: str

    def cluster(self, op: AclOperation) -> Refusal | None:
        if self.authz.authorize(
            self.principal, self.host, op, ResourceType.CLUSTER, CLUSTER_RESOURCE_NAME
        ):
            return None
        return Refusal(
            ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
            f"{self.principal} may not {op.name} the cluster ({self.rpc})",
        )

    def topics(self, op: AclOperation, names: Iterable[str]) -> Refusal | None:
        for name in names:
            if not self.authz.authorize(self.principal, self.host, op, ResourceType.TOPIC, name):
                return Refusal(
                    ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                    f"{self.principal} may not {op.name} topic {name!r} ({self.rpc})",
                )
        return None

    def configs(self, op: AclOperation, resources: Iterable[_ConfigResource]) -> Refusal | None:
        for res in resources:
            if res.resource_type == RESOURCE_TOPIC:
                refusal = self.topics(op, [res.resource_name])
            else:
                refusal = self.cluster(op)
            if refusal is not None:
                return refusal
        return None


class _ConfigResource(Protocol):
    @property
    def resource_type(self) -> int: ...
    @property
    def resource_name(self) -> str: ...


_Rule = Callable[[_Caller, Any], Refusal | None]


def _on_cluster(op: AclOperation) -> _Rule:
    return lambda caller, _request: caller.cluster(op)


def _create_topics(caller: _Caller, request: m.CreateTopicsRequest) -> Refusal | None:
    if caller.cluster(AclOperation.CREATE) is None:
        return None
    return caller.topics(AclOperation.CREATE, (t.name for t in request.topics))


def _delete_topics(caller: _Caller, request: m.DeleteTopicsRequest) -> Refusal | None:
    return caller.topics(AclOperation.DELETE, request.names)


def _create_partitions(caller: _Caller, request: m.CreatePartitionsRequest) -> Refusal | None:
    return caller.topics(AclOperation.ALTER, (t.name for t in request.topics))


def _alter_configs(
    caller: _Caller, request: m.AlterConfigsRequest | m.IncrementalAlterConfigsRequest
) -> Refusal | None:
    return caller.configs(AclOperation.ALTER_CONFIGS, request.resources)


def _describe_configs(caller: _Caller, request: m.DescribeConfigsRequest) -> Refusal | None:
    return caller.configs(AclOperation.DESCRIBE_CONFIGS, request.resources)


# What each RPC needs (the table in the module docstring).
_RULES: dict[str, _Rule] = {
    **{rpc: _on_cluster(AclOperation.CLUSTER_ACTION) for rpc in _CLUSTER_ACTION},
    **{rpc: _on_cluster(AclOperation.ALTER) for rpc in _ALTER_CLUSTER},
    **{rpc: _on_cluster(AclOperation.DESCRIBE) for rpc in _DESCRIBE_CLUSTER},
    "CreateTopics": _create_topics,
    "DeleteTopics": _delete_topics,
    "CreatePartitions": _create_partitions,
    "AlterConfigs": _alter_configs,
    "IncrementalAlterConfigs": _alter_configs,
    "DescribeConfigs": _describe_configs,
    "AlterClientQuotas": _on_cluster(AclOperation.ALTER_CONFIGS),
    "DescribeClientQuotas": _on_cluster(AclOperation.DESCRIBE_CONFIGS),
}


def control_plane_authorizer(config: SecurityConfig) -> ControlPlaneAuthorizer | None:
    """The controller's authorizer for ``config``: enforced only with mutual TLS on the
    control plane (``kraftlog.control.plane.ssl.enabled``) and ``kraftlog.authorizer.enabled``
    (without a verified certificate there is no principal to check); None otherwise."""
    if not (config.control_plane_ssl_enabled and config.authorizer_enabled):
        return None
    own = principal_from_pem(pem_bytes(config.ssl_keystore_location, "ssl.keystore.location"))
    return ControlPlaneAuthorizer(
        config.super_user_names(),
        allow_everyone_if_no_acl_found=config.allow_everyone_if_no_acl_found,
        own_principal=own,
    )
