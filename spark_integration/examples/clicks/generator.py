"""Produce click events: ``{"page": "/pricing", "user": "u42", "ts": 1700000000000}``.

Pages follow a skewed popularity (a few pages get most clicks), users are uniform, and event
times are spread over the ``minutes`` before now, so the per-minute aggregation has several
windows. Keys are user ids (one user's clicks stay in order in one partition); the record
timestamp is the event time.
"""

from __future__ import annotations

import json
import random
import time

from common.error_codes import ErrorCode
from kraftlog_client import Admin, NewTopic, Producer, TopicOperationError

PAGES = ("/", "/pricing", "/docs", "/docs/spark", "/blog", "/signup", "/login", "/about")
# Relative popularity of PAGES (the home page and the docs get most clicks).
PAGE_WEIGHTS = (30, 12, 20, 8, 10, 6, 10, 4)
USERS = 500
FLUSH_TIMEOUT_S = 60.0


def ensure_topic(bootstrap: str, topic: str, partitions: int = 3) -> None:
    """Create ``topic`` (replication factor up to 3, as the cluster allows) unless it exists."""
    with Admin({"bootstrap.servers": bootstrap}) as admin:
        brokers = len(admin.describe_cluster().brokers)
        try:
            admin.create_topics([NewTopic(topic, partitions, min(3, brokers))])
        except TopicOperationError as e:
            if any(err.code != ErrorCode.TOPIC_ALREADY_EXISTS for err in e.errors.values()):
                raise
        admin.wait_for_leaders([topic])


def click_events(count: int, minutes: int, seed: int, now_ms: int) -> list[tuple[str, dict]]:
    """``count`` (user id, event) pairs, event times within ``minutes`` before ``now_ms``."""
    rng = random.Random(seed)
    span_ms = minutes * 60_000
    out = []
    for _ in range(count):
        user = f"u{rng.randrange(USERS)}"
        event = {
            "page": rng.choices(PAGES, PAGE_WEIGHTS)[0],
            "user": user,
            "ts": now_ms - span_ms + rng.randrange(span_ms),
        }
        out.append((user, event))
    out.sort(key=lambda pair: pair[1]["ts"])
    return out


def produce_clicks(
    bootstrap: str, topic: str, count: int, *, minutes: int = 10, seed: int = 7
) -> int:
    """Produce ``count`` click events to ``topic``; returns how many were acknowledged."""
    events = click_events(count, minutes, seed, int(time.time() * 1000))
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    try:
        futures = [
            producer.send(
                topic,
                json.dumps(event, separators=(",", ":")).encode(),
                key=user.encode(),
                timestamp_ms=event["ts"],
            )
            for user, event in events
        ]
        producer.flush(FLUSH_TIMEOUT_S)
        for f in futures:
            f.get(FLUSH_TIMEOUT_S)
    finally:
        producer.close(FLUSH_TIMEOUT_S)
    return len(events)
