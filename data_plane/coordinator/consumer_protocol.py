"""What the coordinator reads of the "consumer" protocol's member metadata: the subscribed
topics (Kafka's ConsumerProtocolSubscription), used to expire the offsets of topics a Stable
group no longer consumes (KIP-496).

Layout (every version starts the same; all integers big-endian)::

    version i16 | topics: count i32, per topic: length i16 + UTF-8 | user_data bytes | ...

Pure functions; thread-safe.
"""

from __future__ import annotations

import struct

PROTOCOL_TYPE = "consumer"
# Bound on the topics one subscription may list (a hostile member cannot make us allocate more).
MAX_SUBSCRIBED_TOPICS = 100_000

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


def subscribed_topics(metadata: bytes) -> set[str] | None:
    """The topics of a consumer subscription, or None when it cannot be decoded (then the
    coordinator expires nothing on its account, as Kafka does)."""
    try:
        pos = _I16.size  # the version: the topic list is the same in all of them
        (count,) = _I32.unpack_from(metadata, pos)
        pos += _I32.size
        if not 0 <= count <= MAX_SUBSCRIBED_TOPICS:
            return None
        topics = set()
        for _ in range(count):
            (length,) = _I16.unpack_from(metadata, pos)
            pos += _I16.size
            if length < 0 or pos + length > len(metadata):
                return None
            topics.add(metadata[pos : pos + length].decode("utf-8"))
            pos += length
        return topics
    except (struct.error, UnicodeDecodeError):
        return None
