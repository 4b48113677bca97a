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
"""

from __future__ import annotations

import enum

DEFAULT_ENTITY = "<default>"
PRODUCER_BYTE_RATE = "producer_byte_rate"
CONSUMER_BYTE_RATE = "consumer_byte_rate"
REQUEST_PERCENTAGE = "request_percentage"
QUOTA_KEYS = (PRODUCER_BYTE_RATE, CONSUMER_BYTE_RATE, REQUEST_PERCENTAGE)


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
