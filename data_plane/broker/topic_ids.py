"""Topic ids (KIP-516) in requests: the names they stand for, filled in before authorization
and the handlers see a request.

Fetch v13+ names its topics (and forgotten topics) only by id; Metadata v12 and DeleteTopics
v6 may name a topic by id instead of by name. Right after decoding, :func:`resolve_topic_ids`
gives each such entry the name this broker's metadata image holds for the id, under the key
the older versions use (``"topic"`` for Fetch, ``"name"`` for Metadata, the ``name`` field of
a DeleteTopicsRequestTopic), and leaves the id in place. An id the image does not know gets
the name None: authorization lets such an entry through (there is no topic to protect) and
the handler answers UNKNOWN_TOPIC_ID.

Why a name and not an id everywhere: the logs, the replica manager, fetch sessions and ACLs
are keyed by name. A client holding the id of a deleted topic never reaches a re-created
topic of the same name: the old id resolves to nothing.

Ids travel as 16 bytes (the codec's uuid type); the zero id means "not given".

Thread-safety: pure functions over a request body and an immutable image.
"""

from __future__ import annotations

import uuid
from typing import Any

from common.protocol.api_keys import ApiKey
from common.protocol.message_base import Message
from common.protocol.messages.delete_topics import DeleteTopicsRequest
from common.protocol.topic_id_versions import (
    DELETE_TOPICS_BY_ID_SINCE,
    FETCH_TOPIC_IDS_SINCE,
    METADATA_LOOKUP_BY_ID_SINCE,
    ZERO_ID,
)
from metadata.image import MetadataImage


def name_of(image: MetadataImage, topic_id: Any) -> str | None:
    """The name of the topic with id ``topic_id`` (16 bytes), None if unknown or zero."""
    if not isinstance(topic_id, bytes | bytearray) or len(topic_id) != 16 or topic_id == ZERO_ID:
        return None
    topic = image.topics_by_id.get(uuid.UUID(bytes=bytes(topic_id)))
    return None if topic is None else topic.name


def resolve_topic_ids(
    api_key: int, version: int, body: dict[str, Any] | Message, image: MetadataImage
) -> None:
    """Fill in the names of the topics ``body`` names by id (in place; see the module
    docstring)."""
    if api_key == ApiKey.DELETE_TOPICS:
        if not isinstance(body, DeleteTopicsRequest):
            raise TypeError(f"DeleteTopics request given as {type(body).__name__}")
        if version >= DELETE_TOPICS_BY_ID_SINCE:
            for topic in body.topics:
                if topic.topic_id != ZERO_ID:
                    topic.name = name_of(image, topic.topic_id)
        return
    if not isinstance(body, dict):
        raise TypeError(f"request {api_key} given as {type(body).__name__}")
    if api_key == ApiKey.FETCH and version >= FETCH_TOPIC_IDS_SINCE:
        for key in ("topics", "forgotten_topics_data"):
            for t in body.get(key) or ():
                t["topic"] = name_of(image, t.get("topic_id"))
    elif api_key == ApiKey.METADATA and version >= METADATA_LOOKUP_BY_ID_SINCE:
        for t in body.get("topics") or ():
            if t.get("name") is None and t.get("topic_id", ZERO_ID) != ZERO_ID:
                t["name"] = name_of(image, t["topic_id"])
