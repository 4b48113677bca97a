"""Client quota entities and keys (Kafka's ClientQuotaEntity): the model shared by the
controller, which stores quota configs, and the broker's quota manager, which enforces them.

Quota entities. A quota config is keyed by (user, client_id), each either a name, ``<default>``
(the default for every user / client id, Kafka's ConfigEntityName.Default) or None (the entity
is not part of the key). The quota of a request from (U, C) is the first entry found in Kafka's
precedence order::

    (U, C), (U, <default>), (U, None), (<default>, C), (<default>, <default>), (<default>, None),
    (None, C), (None, <default>)

and the rate it is measured against is shared by every client of that entry (e.g. all client
ids of user U when the (U, None) entry applies). No entry: unlimited.

On the Kafka protocol (DescribeClientQuotas, AlterClientQuotas) an entity is a list of
(entity type, entity name) pairs: ``user`` and ``client-id`` (:data:`ENTITY_USER`,
:data:`ENTITY_CLIENT_ID`), a null name meaning the default entity; an entity type absent from
the list is None here. Kafka's third type, ``ip`` (connection-rate quotas), is known to the
protocol but never stored by kraftlog.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass, field

from common.error_codes import ErrorCode

DEFAULT_ENTITY = "<default>"
PRODUCER_BYTE_RATE = "producer_byte_rate"
CONSUMER_BYTE_RATE = "consumer_byte_rate"
REQUEST_PERCENTAGE = "request_percentage"
QUOTA_KEYS = (PRODUCER_BYTE_RATE, CONSUMER_BYTE_RATE, REQUEST_PERCENTAGE)
# The keys whose values are whole numbers (Kafka's LONG quota configs).
INTEGRAL_QUOTA_KEYS = (PRODUCER_BYTE_RATE, CONSUMER_BYTE_RATE)

# Kafka's ClientQuotaEntity types.
ENTITY_USER = "user"
ENTITY_CLIENT_ID = "client-id"
ENTITY_IP = "ip"


class QuotaType(enum.Enum):
    PRODUCE = PRODUCER_BYTE_RATE
    FETCH = CONSUMER_BYTE_RATE


# (user entity, client-id entity); see the module docstring.
QuotaEntity = tuple[str | None, str | None]


def entity_precedence(user: str, client_id: str) -> tuple[QuotaEntity, ...]:
    d = DEFAULT_ENTITY
    return (
        (user, client_id),
        (user, d),
        (user, None),
        (d, client_id),
        (d, d),
        (d, None),
        (None, client_id),
        (None, d),
    )


def wire_entity(entity: QuotaEntity) -> list[tuple[str, str | None]]:
    """``entity`` as Kafka's (entity type, entity name) pairs (name None: the default)."""
    out: list[tuple[str, str | None]] = []
    for entity_type, name in zip((ENTITY_USER, ENTITY_CLIENT_ID), entity, strict=True):
        if name is not None:
            out.append((entity_type, None if name == DEFAULT_ENTITY else name))
    return out


# DescribeClientQuotas filters: match an exact name, the default entity, or any entity of a
# type (named or default).
MATCH_TYPE_EXACT = 0
MATCH_TYPE_DEFAULT = 1
MATCH_TYPE_SPECIFIED = 2

_ENTITY_TYPES = (ENTITY_USER, ENTITY_CLIENT_ID, ENTITY_IP)

# A filter component: (entity type, match type, match string or None).
FilterComponent = tuple[str, int, str | None]


class FilterError(Exception):
    """A filter Kafka refuses, with the error code it answers."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(slots=True)
class QuotaFilter:
    """A checked DescribeClientQuotas filter: entity type -> the name it must have (None:
    the default entity), the types that must merely be present, and whether other types
    exclude an entity (``strict``)."""

    exact: dict[str, str | None] = field(default_factory=dict)
    specified: set[str] = field(default_factory=set)
    strict: bool = False

    def matches(self, entity: dict[str, str | None]) -> bool:
        if self.strict and len(entity) != len(self.exact) + len(self.specified):
            return False
        for entity_type, name in self.exact.items():
            if entity_type not in entity or entity[entity_type] != name:
                return False
        return all(entity_type in entity for entity_type in self.specified)


def quota_filter(components: Iterable[FilterComponent], strict: bool) -> QuotaFilter:
    """The filter of ``components`` (DescribeClientQuotas' ``components`` and ``strict``);
    raises :class:`FilterError` where Kafka's ClientQuotasImage refuses it."""
    flt = QuotaFilter(strict=strict)
    for entity_type, match_type, match in components:
        if not entity_type:
            raise FilterError(ErrorCode.INVALID_REQUEST, "Invalid empty entity type.")
        if entity_type in flt.exact or entity_type in flt.specified:
            raise FilterError(
                ErrorCode.INVALID_REQUEST,
                f"Entity type {entity_type} cannot appear more than once in the filter.",
            )
        if entity_type not in _ENTITY_TYPES:
            raise FilterError(
                ErrorCode.UNSUPPORTED_VERSION, f"Unsupported entity type {entity_type}"
            )
        if match_type == MATCH_TYPE_EXACT:
            if match is None:
                raise FilterError(
                    ErrorCode.INVALID_REQUEST,
                    "Request specified MATCH_TYPE_EXACT, but set match string to null.",
                )
            flt.exact[entity_type] = match
        elif match_type == MATCH_TYPE_DEFAULT:
            if match is not None:
                raise FilterError(
                    ErrorCode.INVALID_REQUEST,
                    "Request specified MATCH_TYPE_DEFAULT, but also specified a match string.",
                )
            flt.exact[entity_type] = None
        elif match_type == MATCH_TYPE_SPECIFIED:
            if match is not None:
                raise FilterError(
                    ErrorCode.INVALID_REQUEST,
                    "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.",
                )
            flt.specified.add(entity_type)
        else:
            raise FilterError(ErrorCode.INVALID_REQUEST, f"Unknown match type {match_type}")
    named = flt.exact.keys() | flt.specified
    if ENTITY_IP in named and (ENTITY_USER in named or ENTITY_CLIENT_ID in named):
        raise FilterError(
            ErrorCode.INVALID_REQUEST,
            "Invalid entity filter component combination. IP filter component should not be "
            "used with user or clientId filter component.",
        )
    return flt
