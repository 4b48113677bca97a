from __future__ import annotations

import pytest

from common.configdef import ConfigError
from kraftlog_client import Consumer, Producer
from kraftlog_client.config import ConsumerConfig, ProducerConfig, client_config


def test_kafka_property_names_and_defaults() -> None:
    c = client_config(ProducerConfig, {"bootstrap.servers": "a:1,b:2", "linger.ms": "0"})
    assert c.bootstrap_servers == ("a:1", "b:2") and c.linger_ms == 0
    assert c.acks == "all" and c.acks_value == -1 and c.batch_size == 16384
    assert c.buffer_memory == 32 * 1024 * 1024 and c.compression_type == "none"


def test_keyword_arguments_use_underscores() -> None:
    c = client_config(ProducerConfig, acks=1, compression_type="zstd")
    assert c.acks_value == 1 and c.compression_type == "zstd"


def test_unknown_and_invalid_properties_are_refused() -> None:
    with pytest.raises(ConfigError, match=r"lingr\.ms"):
        client_config(ProducerConfig, {"lingr.ms": 5})
    with pytest.raises(ConfigError, match=r"compression\.type"):
        client_config(ProducerConfig, {"compression.type": "brotli"})
    with pytest.raises(ConfigError, match=r"auto\.offset\.reset"):
        client_config(ConsumerConfig, {"auto.offset.reset": "smallest"})


def test_idempotence_is_on_by_default_and_off_quietly_when_acks_conflict() -> None:
    assert client_config(ProducerConfig, {}).idempotent
    assert client_config(ProducerConfig, {"enable.idempotence": "true"}).idempotent
    assert not client_config(ProducerConfig, {"acks": "1"}).idempotent
    assert not client_config(ProducerConfig, {"acks": "0"}).idempotent
    assert not client_config(ProducerConfig, {"retries": "0"}).idempotent
    assert not client_config(
        ProducerConfig, {"max.in.flight.requests.per.connection": "6"}
    ).idempotent
    assert not client_config(ProducerConfig, {"enable.idempotence": "false"}).idempotent


def test_explicit_idempotence_with_a_conflicting_setting_is_refused() -> None:
    with pytest.raises(ConfigError, match="acks=all"):
        client_config(ProducerConfig, {"enable.idempotence": "true", "acks": "1"})
    with pytest.raises(ConfigError, match="retries"):
        client_config(ProducerConfig, {"enable.idempotence": "true", "retries": "0"})
    with pytest.raises(ConfigError, match=r"max\.in\.flight"):
        Producer({"enable.idempotence": "true", "max.in.flight.requests.per.connection": 6})


def test_group_settings_are_checked_at_construction() -> None:
    with pytest.raises(ConfigError, match=r"heartbeat\.interval\.ms"):
        Consumer({"group.id": "g", "session.timeout.ms": 3000, "heartbeat.interval.ms": 3000})
    with pytest.raises(ConfigError, match="unknown assignor 'sticky'"):
        Consumer({"group.id": "g", "partition.assignment.strategy": "range,sticky"})


def test_a_bad_bootstrap_address_is_refused_at_construction() -> None:
    with pytest.raises(ValueError, match="host:port"):
        Consumer({"bootstrap.servers": "no-port-here"})
