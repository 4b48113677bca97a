"""LogConfig under Kafka's broker and topic property names."""

from __future__ import annotations

import pytest

from common.configdef import ConfigError, describe, from_props, to_props, with_overrides
from common.log_config import LogConfig


def test_defaults_match_kafka() -> None:
    c = LogConfig()
    assert c.segment_bytes == 1 << 30 and c.index_interval_bytes == 4096
    assert c.segment_index_bytes == 10 << 20 and c.retention_ms == 7 * 24 * 3600 * 1000
    assert c.retention_bytes == -1 and c.max_message_bytes == 1048588
    assert c.message_timestamp_type == "CreateTime" and c.cleanup_policy == "delete"


def test_broker_keys_and_topic_overrides() -> None:
    broker = from_props(
        LogConfig,
        {"log.segment.bytes": "1000", "log.dirs": "/a,/b", "log.retention.ms": "-1"},
    )
    assert broker.segment_bytes == 1000 and broker.log_dirs == ("/a", "/b")
    topic = with_overrides(
        broker, {"segment.bytes": "2000", "message.timestamp.type": "LogAppendTime"}, topic=True
    )
    assert topic.segment_bytes == 2000 and topic.log_append_time
    assert topic.retention_ms == -1  # inherited from the broker default
    assert to_props(topic, topic=True)["segment.bytes"] == "2000"
    with pytest.raises(ConfigError, match=r"cleanup\.policy"):
        with_overrides(broker, {"cleanup.policy": "shred"}, topic=True)
    with pytest.raises(ConfigError, match=r"segment\.bytes"):
        with_overrides(broker, {"segment.bytes": str(1 << 31)}, topic=True)


def test_every_key_is_documented() -> None:
    for key, _default, doc in describe(LogConfig) + describe(LogConfig, topic=True):
        assert doc, key


def test_docs_table_matches_the_config_definitions() -> None:
    import os

    doc_path = os.path.join(os.path.dirname(__file__), "..", "..", "..", "docs", "storage.md")
    with open(doc_path, encoding="utf-8") as f:
        text = f.read()
    for key, default, _doc in describe(LogConfig):
        assert f"| `{key}` |" in text, key
        row = next(line for line in text.splitlines() if line.startswith(f"| `{key}` |"))
        assert f"| `{default}` |" in row, key
