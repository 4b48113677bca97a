"""Authorization of Kafka requests around the handlers (sans-IO): the generic machinery.

Each API's rule lives beside its handler (``data_plane/broker/handlers/<api>.py``,
``authorize``) and the handler registry (:data:`data_plane.broker.handlers.HANDLERS`) lists it
with the ACLs it checks; this module holds what the rules share. A rule is an
:data:`AuthorizationRule`: it looks at one decoded request and returns a :class:`Verdict` that
the connection layer applies:

- ``body``: the request the handler sees: resources the principal may not touch are removed
  (a Produce to an unwritable topic, a Fetch of an unreadable one, ...);
- ``respond_now``: a complete response; the handler is not called (JoinGroup to a group the
  principal may not read, InitProducerId without IdempotentWrite, ...);
- ``finish``: applied to the handler's response: removed resources come back as entries with
  TOPIC_AUTHORIZATION_FAILED / GROUP_AUTHORIZATION_FAILED / CLUSTER_AUTHORIZATION_FAILED (every
  requested partition is answered: kafka-python drops a Fetch response that omits one), and
  Metadata / OffsetFetch / ListGroups drop what the principal may not describe;
- ``denied``: the resources refused, by type (the kraftlog_authorization_denied_total metric).

Every ACL lookup a rule makes to admit or refuse a resource goes through
:meth:`RequestAuthorizer.allowed` (or :meth:`RequestAuthorizer.allowed_any`); the authorized
operations bitfields (KIP-430) go through :meth:`RequestAuthorizer.cluster_operations` and
:meth:`RequestAuthorizer.topic_operations`. Implied operations (Describe by Read, Write, Delete
or Alter; DescribeConfigs by AlterConfigs) are the :class:`Authorizer`'s, as in Kafka.

Thread-safety: stateless apart from the authorizer (itself thread-safe); runs on the loop.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar, overload

from common.error_codes import ErrorCode
from common.protocol.message_base import Message
from common.security.acl import (
    CLUSTER_OPERATIONS,
    CLUSTER_RESOURCE_NAME,
    TOPIC_OPERATIONS,
    AclOperation,
    Authorizer,
    ResourceType,
    operations_bitfield,
)
from common.security.principal import KafkaPrincipal

# A decoded body: a dict, or a typed message for the APIs the codec serves typed
# (common.protocol.codec.TYPED_APIS) while the conversion of the rest goes on.
Body = dict[str, Any]
AnyBody = dict[str, Any] | Message
M = TypeVar("M", bound=Message)
TOPIC_DENIED = int(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
GROUP_DENIED = int(ErrorCode.GROUP_AUTHORIZATION_FAILED)
CLUSTER_DENIED = int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
TXN_DENIED = int(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)

# An ACL an API checks: an operation on a resource type (Kafka's AclOperation, ResourceType).
Acl = tuple[AclOperation, ResourceType]


@dataclass(slots=True)
class Verdict:
    body: AnyBody
    respond_now: AnyBody | None = None
    finish: Callable[[AnyBody], AnyBody] | None = None
    # Resources refused (for the kraftlog_authorization_denied_total metric), by type.
    denied: dict[ResourceType, int] | None = None

    @staticmethod
    def refused(body: AnyBody, response: AnyBody, rtype: ResourceType, count: int = 1) -> Verdict:
        """The request answered at once with ``response`` (the handler is not called);
        ``count`` resources of ``rtype`` are counted as denied."""
        v = Verdict(body, respond_now=response)
        v.note(rtype, count)
        return v

    def note(self, rtype: ResourceType, count: int = 1) -> None:
        if count:
            if self.denied is None:
                self.denied = {}
            self.denied[rtype] = self.denied.get(rtype, 0) + count


@dataclass(frozen=True, slots=True)
class Session:
    """Who sent a request: the authenticated principal and the client's IP address."""

    principal: KafkaPrincipal
    host: str


# rule(authorizer, session, api version, request body) -> what the connection does.
AuthorizationRule = Callable[["RequestAuthorizer", Session, int, Any], Verdict]


def unchecked(authz: RequestAuthorizer, s: Session, version: int, body: AnyBody) -> Verdict:
    """The rule of an API that checks no ACL (ApiVersions, SaslHandshake, SaslAuthenticate:
    Kafka answers them before, or without, any authorization)."""
    return Verdict(body)


class RequestAuthorizer:
    """Applies each API's rule (``rules``: api key -> rule, from the handler registry) to the
    requests of authenticated sessions. ``topic_exists(name)`` tells Metadata which requested
    topics would be auto-created."""

    def __init__(
        self,
        authorizer: Authorizer,
        topic_exists: Callable[[str], bool],
        rules: Mapping[int, AuthorizationRule],
    ) -> None:
        self.authorizer = authorizer
        self.topic_exists = topic_exists
        self._rules = dict(rules)

    def check(self, session: Session, api_key: int, version: int, body: Body) -> Verdict:
        """The verdict for one request. An API without a rule is one the broker does not
        serve (the connection answers it UNSUPPORTED_VERSION): it passes unchanged."""
        rule = self._rules.get(api_key)
        if rule is None:
            return Verdict(body)
        return rule(self, session, version, body)

    # --- ACL lookups --------------------------------------------------------------------------

    def allowed(self, s: Session, op: AclOperation, rtype: ResourceType, name: str) -> bool:
        """Whether the session may perform ``op`` on the resource ``rtype`` ``name``."""
        return self.authorizer.authorize(s.principal, s.host, op, rtype, name)

    def allowed_any(self, s: Session, op: AclOperation, rtype: ResourceType) -> bool:
        """Whether the session may perform ``op`` on some resource of type ``rtype``."""
        return self.authorizer.authorize_any(s.principal, s.host, op, rtype)

    def topic(self, s: Session, op: AclOperation, name: str) -> bool:
        return self.allowed(s, op, ResourceType.TOPIC, name)

    def cluster(self, s: Session, op: AclOperation) -> bool:
        return self.allowed(s, op, ResourceType.CLUSTER, CLUSTER_RESOURCE_NAME)

    def group(self, s: Session, op: AclOperation, name: str) -> bool:
        return self.allowed(s, op, ResourceType.GROUP, name)

    def transactional_id(self, s: Session, op: AclOperation, name: str) -> bool:
        return self.allowed(s, op, ResourceType.TRANSACTIONAL_ID, name)

    # --- authorized operations (KIP-430) ------------------------------------------------------

    def _may(self, s: Session, op: AclOperation, rtype: ResourceType, name: str) -> bool:
        # Not through allowed(): a bitfield asks about every operation, not the ACLs an API
        # declares it checks (what allowed() stands for).
        return self.authorizer.authorize(s.principal, s.host, op, rtype, name)

    def cluster_operations(self, s: Session) -> int:
        """The bitfield of cluster operations the session may perform."""
        # Kafka: the operations allowed, if Describe on the cluster is; else none.
        cluster = ResourceType.CLUSTER
        if not self._may(s, AclOperation.DESCRIBE, cluster, CLUSTER_RESOURCE_NAME):
            return 0
        return operations_bitfield(
            op for op in CLUSTER_OPERATIONS if self._may(s, op, cluster, CLUSTER_RESOURCE_NAME)
        )

    def topic_operations(self, s: Session, name: str) -> int:
        """The bitfield of operations the session may perform on topic ``name``."""
        return operations_bitfield(
            op for op in TOPIC_OPERATIONS if self._may(s, op, ResourceType.TOPIC, name)
        )

    # --- partially authorized requests --------------------------------------------------------

    @overload
    def split_topics(
        self,
        s: Session,
        body: Body,
        op: AclOperation,
        *,
        list_key: str = "topics",
        name_key: str = "name",
    ) -> tuple[Body, list[dict[str, Any]]]: ...

    @overload
    def split_topics(
        self,
        s: Session,
        body: M,
        op: AclOperation,
        *,
        list_key: str = "topics",
        name_key: str = "name",
    ) -> tuple[M, list[Any]]: ...

    def split_topics(
        self,
        s: Session,
        body: AnyBody,
        op: AclOperation,
        *,
        list_key: str = "topics",
        name_key: str = "name",
    ) -> tuple[AnyBody, list[Any]]:
        """(body with only the topics of its ``list_key`` list the session may ``op``, the
        denied topic entries); ``body`` itself when none is denied. A dict body's entries are
        dicts (``name_key`` their key); a typed body's are structs (``name_key`` their
        attribute), and the narrowed body is a copy (``dataclasses.replace``). Never mutates
        ``body``."""
        typed = isinstance(body, Message)
        items = getattr(body, list_key) if isinstance(body, Message) else body.get(list_key) or []
        allowed: list[Any] = []
        denied: list[Any] = []
        cache: dict[str, bool] = {}
        for item in items:
            name = getattr(item, name_key) if typed else item.get(name_key, "")
            if name is None:
                # A topic id this broker does not know (data_plane.broker.topic_ids): there is
                # nothing to protect, and the handler answers UNKNOWN_TOPIC_ID.
                allowed.append(item)
                continue
            ok = cache.get(name)
            if ok is None:
                ok = cache[name] = self.topic(s, op, name)
            (allowed if ok else denied).append(item)
        if not denied:
            return body, []
        if isinstance(body, Message):
            return dataclasses.replace(body, **{list_key: allowed}), denied  # type: ignore[type-var]
        new = dict(body)
        new[list_key] = allowed
        return new, denied


def append(response: AnyBody, list_key: str, entries: Sequence[object]) -> AnyBody:
    """``response`` with ``entries`` added at the end of its ``list_key`` list (a dict key or
    a typed message's field)."""
    if isinstance(response, Message):
        setattr(response, list_key, [*getattr(response, list_key), *entries])
    else:
        response[list_key] = list(response.get(list_key) or []) + list(entries)
    return response


def with_denied(
    new: AnyBody, rtype: ResourceType, denied: int, list_key: str, entries: Sequence[object]
) -> Verdict:
    """The request ``new`` (without its ``denied`` resources of ``rtype``); their error
    ``entries`` are appended to the response's ``list_key`` when it comes back."""
    v = Verdict(new)
    v.note(rtype, denied)
    v.finish = lambda r: append(r, list_key, entries)
    return v


def with_denied_topics(
    new: AnyBody, denied: int, list_key: str, entries: Sequence[object]
) -> Verdict:
    """:func:`with_denied` for ``denied`` topics."""
    return with_denied(new, ResourceType.TOPIC, denied, list_key, entries)


def keep_only(list_key: str, keep: Callable[[Any], bool]) -> Callable[[AnyBody], AnyBody]:
    """A ``finish`` that drops the entries of the response's ``list_key`` not kept (what the
    session may not describe, when it asked for all of them); ``keep`` gets a dict entry or a
    typed struct, as the response is."""

    def finish(response: AnyBody) -> AnyBody:
        if isinstance(response, Message):
            setattr(response, list_key, [e for e in getattr(response, list_key) if keep(e)])
        else:
            response[list_key] = [e for e in response.get(list_key) or [] if keep(e)]
        return response

    return finish


def partition_errors(topics: list[dict[str, Any]], code: int) -> list[dict[str, Any]]:
    """Answers for ``topics`` (request entries with ``partitions``): every partition ``code``."""
    return [
        {
            "name": t.get("name", ""),
            "partitions": [
                {"partition_index": p.get("partition_index", 0), "error_code": code}
                for p in t.get("partitions") or []
            ],
        }
        for t in topics
    ]
