"""Option parsing: Spark's Kafka source names, defaults, and clear errors (no Spark needed)."""

from __future__ import annotations

import pytest

from common.topic_partition import TopicPartition
from spark_integration.offsets import (
    EARLIEST,
    LATEST,
    PartitionOffsets,
    PartitionTimestamps,
    offsets_from_json,
    offsets_to_json,
)
from spark_integration.options import OptionError, parse_read_options, parse_write_options

BOOT = {"kafka.bootstrap.servers": "127.0.0.1:9092"}


def read(streaming: bool = False, **options: str):
    return parse_read_options({**BOOT, **options}, streaming=streaming)


def test_defaults_follow_sparks_kafka_source() -> None:
    batch = read(subscribe="a, b")
    assert batch.subscription.topics == ("a", "b")
    assert batch.starting == EARLIEST and batch.ending == LATEST
    assert batch.fail_on_data_loss and not batch.include_headers and batch.arrow
    assert batch.min_partitions is None and batch.max_offsets_per_trigger is None
    assert read(True, subscribe="a").starting == LATEST  # streaming starts at the end


def test_option_names_arrive_lower_cased_and_values_as_strings() -> None:
    o = parse_read_options(
        {
            "bootstrap.servers": "h:1",
            "subscribepattern": "clicks-.*",
            "startingoffsets": '{"t":{"0":5,"1":-2}}',
            "minpartitions": "4",
            "failondataloss": "false",
            "includeheaders": "TRUE",
            "kafka.request.timeout.ms": "5000",
        },
        streaming=False,
    )
    assert o.bootstrap_servers == "h:1"
    assert o.subscription.matches("clicks-eu") and not o.subscription.matches("xclicks-eu")
    assert o.starting == PartitionOffsets({TopicPartition("t", 0): 5, TopicPartition("t", 1): -2})
    assert o.min_partitions == 4 and not o.fail_on_data_loss and o.include_headers
    assert o.client_props() == {"bootstrap.servers": "h:1", "request.timeout.ms": "5000"}


def test_assign_and_timestamps() -> None:
    o = read(
        assign='{"t":[1,0]}',
        startingOffsetsByTimestamp='{"t":{"0":1000,"1":2000}}',
        endingTimestamp="5000",
    )
    assert o.subscription.assigned == (TopicPartition("t", 0), TopicPartition("t", 1))
    assert isinstance(o.starting, PartitionTimestamps)
    assert o.starting.timestamp_for(TopicPartition("t", 1)) == 2000
    assert o.ending == PartitionTimestamps(global_ms=5000)


@pytest.mark.parametrize(
    ("options", "streaming", "message"),
    [
        ({"subscribe": "a", "typo": "1"}, False, "unknown option 'typo'"),
        ({"subscribe": "a", "assign": '{"a":[0]}'}, False, "exactly one of subscribe"),
        ({}, False, "exactly one of subscribe"),
        (
            {"subscribe": "a", "startingOffsets": "earliest", "startingTimestamp": "1"},
            False,
            "conflict",
        ),
        ({"subscribe": "a", "startingOffsets": "latest"}, False, "not allowed in a batch"),
        ({"subscribe": "a", "startingOffsets": '{"a":{"0":-1}}'}, False, "not allowed in a batch"),
        ({"subscribe": "a", "endingOffsets": "earliest"}, False, "not allowed in a batch"),
        ({"subscribe": "a", "endingOffsets": "latest"}, True, "batch queries only"),
        ({"subscribe": "a", "maxOffsetsPerTrigger": "10"}, False, "streaming queries only"),
        ({"subscribe": "a", "maxOffsetsPerTrigger": "0"}, True, "below the minimum"),
        ({"subscribe": "a", "minPartitions": "x"}, False, "expected an integer"),
        ({"subscribe": "a", "failOnDataLoss": "maybe"}, False, "expected true or false"),
        ({"subscribe": "a", "startingOffsets": "{bad"}, False, "startingOffsets must be"),
        ({"subscribe": "a", "startingOffsets": '{"a":{"0":-3}}'}, False, "is invalid"),
        ({"subscribe": "a", "startingOffsets": '{"a":{"x":1}}'}, False, "not a number"),
        ({"subscribePattern": "("}, False, "not a regular expression"),
        ({"assign": '{"a":["0"]}'}, False, "list of partition numbers"),
        ({"assign": '{"a":[0]}', "startingOffsets": '{"a":{"1":0}}'}, False, "must be the same"),
        ({"subscribe": "a", "kafka.group.id": "g"}, False, "kafka.group.id cannot be set"),
        ({"subscribe": "a", "kafka.no.such.property": "1"}, False, "no.such.property"),
        ({"subscribe": "a", "maxTriggerDelay": "5s"}, True, "not supported by kraftlog"),
        ({"subscribe": "a", "startingTimestamp": "-5"}, False, "negative"),
    ],
)
def test_bad_options_fail_with_a_clear_message(
    options: dict[str, str], streaming: bool, message: str
) -> None:
    with pytest.raises(OptionError, match=message):
        parse_read_options({**BOOT, **options}, streaming=streaming)


def test_bootstrap_servers_is_required_and_its_aliases_must_agree() -> None:
    with pytest.raises(OptionError, match=r"kafka\.bootstrap\.servers is required"):
        parse_read_options({"subscribe": "a"}, streaming=False)
    with pytest.raises(OptionError, match="disagree"):
        parse_read_options(
            {"subscribe": "a", "bootstrap.servers": "a:1", "kafka.bootstrap.servers": "b:1"},
            streaming=False,
        )


def test_write_options() -> None:
    o = parse_write_options({**BOOT, "topic": "out", "kafka.linger.ms": "20"})
    assert o.topic == "out"
    props = o.client_props()
    assert props["acks"] == "all" and props["enable.idempotence"] == "true"
    assert props["linger.ms"] == "20"
    assert parse_write_options(BOOT).topic is None
    with pytest.raises(OptionError, match="acks=all"):
        parse_write_options({**BOOT, "kafka.acks": "1"})
    with pytest.raises(OptionError, match="unknown option 'subscribe'"):
        parse_write_options({**BOOT, "subscribe": "x"})


def test_exactly_once_write_options() -> None:
    assert not parse_write_options({**BOOT, "topic": "out"}).exactly_once  # batch default
    o = parse_write_options({**BOOT, "topic": "out"}, streaming=True)
    assert o.exactly_once and o.transactional_id_prefix == "kraftlog-spark-out"
    assert o.commit_log == "_kraftlog_spark_commits"
    props = o.transactional_props(3)
    assert props["transactional.id"] == "kraftlog-spark-out-3"
    assert props["transaction.timeout.ms"] == "300000" and props["acks"] == "all"
    o = parse_write_options(
        {
            **BOOT,
            "topic": "out",
            "exactlyOnce": "TRUE",
            "transactionalIdPrefix": "q1",
            "exactlyOnce.commitLog": "decisions",
            "kafka.transaction.timeout.ms": "90000",
        }
    )
    assert (o.exactly_once, o.transactional_id_prefix, o.commit_log) == (True, "q1", "decisions")
    assert o.transactional_props(0)["transaction.timeout.ms"] == "90000"
    at_least_once = parse_write_options(
        {**BOOT, "topic": "out", "exactlyOnce": "false"}, streaming=True
    )
    assert not at_least_once.exactly_once
    with pytest.raises(OptionError, match="transactionalIdPrefix needs exactlyOnce=true"):
        parse_write_options({**BOOT, "topic": "out", "transactionalIdPrefix": "q1"})
    with pytest.raises(OptionError, match="needs transactionalIdPrefix"):
        parse_write_options(BOOT, streaming=True)  # no topic option: no default prefix
    with pytest.raises(OptionError, match="exactlyOnce: expected true or false"):
        parse_write_options({**BOOT, "topic": "out", "exactlyOnce": "yes"})
    with pytest.raises(OptionError, match="transactionalIdPrefix: 'a b'"):
        parse_write_options(
            {**BOOT, "topic": "o", "exactlyOnce": "true", "transactionalIdPrefix": "a b"}
        )
    with pytest.raises(OptionError, match=r"kafka\.transactional\.id cannot be set"):
        parse_write_options({**BOOT, "topic": "o", "kafka.transactional.id": "x"})
    with pytest.raises(OptionError, match=r"kafka\.transaction\.timeout\.ms needs exactlyOnce"):
        parse_write_options({**BOOT, "topic": "o", "kafka.transaction.timeout.ms": "1000"})


def test_streaming_offsets_round_trip_through_json_with_string_partition_keys() -> None:
    offsets = {TopicPartition("b", 10): 7, TopicPartition("a", 2): 0, TopicPartition("a", 1): 3}
    as_json = offsets_to_json(offsets)
    assert as_json == {"a": {"1": 3, "2": 0}, "b": {"10": 7}}
    assert offsets_from_json(as_json) == offsets
