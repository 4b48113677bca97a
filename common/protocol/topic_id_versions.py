"""Where the Kafka protocol names topics by id (KIP-516): the zero id, the APIs and the first
version of each that does (Kafka's message schemas)."""

from __future__ import annotations

from common.protocol.api_keys import ApiKey

# A topic id travels as 16 bytes; all zero means "not given" (Kafka's Uuid.ZERO_UUID).
ZERO_ID = bytes(16)
# Fetch v13+ names topics (and forgotten topics) only by id.
FETCH_TOPIC_IDS_SINCE = 13
# Metadata v12 looks a topic up by id when its name is null (v10+ answers topic ids).
METADATA_LOOKUP_BY_ID_SINCE = 12
# DeleteTopics v6 names each topic by name or by id.
DELETE_TOPICS_BY_ID_SINCE = 6
# The APIs whose requests may name topics by id.
TOPIC_ID_APIS = frozenset({ApiKey.FETCH, ApiKey.METADATA, ApiKey.DELETE_TOPICS})
