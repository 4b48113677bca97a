"""Options of the ``kraftlog`` data source: Spark's Kafka source names, checked up front.

Sans-IO and free of pyspark, so every rule is unit-tested without a JVM. Spark hands a data
source its options with lower-cased keys and string values; :func:`parse_read_options` and
:func:`parse_write_options` map them back to the documented (camelCase) names, reject unknown
keys and conflicting combinations with a message naming the option, and return frozen
dataclasses. Scalar options are declared with :func:`common.configdef.prop` and coerced by
:func:`common.configdef.from_props`; ``kafka.``-prefixed options are client properties,
validated by the native client's own config classes.

Read options (the built-in Kafka source's, see docs/spark.md):

    kafka.bootstrap.servers | bootstrap.servers      required
    subscribe | subscribePattern | assign            exactly one
    startingOffsets | startingTimestamp | startingOffsetsByTimestamp     at most one
    endingOffsets | endingTimestamp | endingOffsetsByTimestamp           at most one (batch)
    startingOffsetsByTimestampStrategy (error | latest), minPartitions, maxOffsetsPerTrigger,
    failOnDataLoss, includeHeaders, kafkaConsumer.pollTimeoutMs, kafka.<consumer property>
    (kafka.isolation.level: read_committed, the default, or read_uncommitted)
    kraftlog.arrow (true: pyarrow record batches, false: tuples; kraftlog's own)

Write options (Spark's Kafka sink's, plus kraftlog's exactly-once writer; see docs/spark.md):

    kafka.bootstrap.servers | bootstrap.servers      required
    topic                                            or a topic column
    exactlyOnce                     streaming: true, batch: false (at-least-once)
    transactionalIdPrefix           exactly-once: default kraftlog-spark-<topic>
    exactlyOnce.commitLog           exactly-once: the decision log topic
    kafka.transaction.timeout.ms    exactly-once: default 300000 (5 min)
    kafka.<producer property>
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from common.configdef import ConfigError, from_props, known_keys, prop
from common.topic_partition import TopicPartition
from kraftlog_client.config import ConsumerConfig, ProducerConfig, client_config
from spark_integration.offsets import (
    EARLIEST,
    LATEST,
    OffsetSpec,
    PartitionOffsets,
    PartitionTimestamps,
    parse_offset_spec,
    parse_partition_json,
)


class OptionError(ConfigError):
    """An option of the kraftlog data source is unknown, malformed or conflicts with another."""


# Consumer properties the source sets itself (Spark's Kafka source refuses them too).
_FORBIDDEN_CONSUMER_KEYS = {
    "kafka.group.id": "the source tracks offsets itself (no consumer group)",
    "kafka.auto.offset.reset": "use startingOffsets",
    "kafka.key.deserializer": "keys are always returned as binary",
    "kafka.value.deserializer": "values are always returned as binary",
    "kafka.enable.auto.commit": "the source commits nothing to the cluster",
    "kafka.interceptor.classes": "not supported",
}
# Spark Kafka source options kraftlog does not implement: a clear error beats silence.
_UNSUPPORTED = {
    "minoffsetspertrigger": "minOffsetsPerTrigger",
    "maxtriggerdelay": "maxTriggerDelay",
    "groupidprefix": "groupIdPrefix",
    "fetchoffset.numretries": "fetchOffset.numRetries",
    "fetchoffset.retryintervalms": "fetchOffset.retryIntervalMs",
    "maxrecordsperpartition": "maxRecordsPerPartition",
    "kafka.security.protocol": "kafka.security.protocol",
}


@dataclass(frozen=True, slots=True)
class _ScalarReadOptions:
    """The options that are plain values (declared once, coerced by configdef)."""

    min_partitions: int | None = field(
        default=None,
        metadata=prop("minPartitions", min=1, doc="split offset ranges into at least N tasks"),
    )
    max_offsets_per_trigger: int | None = field(
        default=None,
        metadata=prop(
            "maxOffsetsPerTrigger",
            min=1,
            doc="records per micro-batch, split across partitions in proportion to backlog",
        ),
    )
    fail_on_data_loss: bool = field(
        default=True,
        metadata=prop("failOnDataLoss", doc="fail when requested offsets are gone (retention)"),
    )
    include_headers: bool = field(default=False, metadata=prop("includeHeaders"))
    poll_timeout_ms: int = field(
        default=120000,
        metadata=prop(
            "kafkaConsumer.pollTimeoutMs", min=1, doc="give up reading a range after this long"
        ),
    )
    by_timestamp_strategy: str = field(
        default="error",
        metadata=prop(
            "startingOffsetsByTimestampStrategy",
            choices=("error", "latest"),
            doc="no offset at or after a starting timestamp: fail, or start at latest",
        ),
    )
    arrow: bool = field(
        default=True,
        metadata=prop("kraftlog.arrow", doc="read() yields pyarrow RecordBatches (else tuples)"),
    )


_OFFSET_KEYS = (
    "startingOffsets",
    "startingTimestamp",
    "startingOffsetsByTimestamp",
    "endingOffsets",
    "endingTimestamp",
    "endingOffsetsByTimestamp",
)
_SUBSCRIBE_KEYS = ("subscribe", "subscribePattern", "assign")
_BOOTSTRAP_KEYS = ("kafka.bootstrap.servers", "bootstrap.servers")
_READ_KEYS = {
    k.lower(): k
    for k in (*_OFFSET_KEYS, *_SUBSCRIBE_KEYS, *_BOOTSTRAP_KEYS, *known_keys(_ScalarReadOptions))
}


@dataclass(frozen=True, slots=True)
class Subscription:
    """Which partitions to read: topics, a regular expression over topic names, or a fixed
    assignment of partitions."""

    kind: str  # "subscribe" | "subscribePattern" | "assign"
    topics: tuple[str, ...] = ()
    pattern: str | None = None
    assigned: tuple[TopicPartition, ...] = ()

    def matches(self, topic: str) -> bool:
        if self.kind == "subscribe":
            return topic in self.topics
        if self.kind == "subscribePattern":
            return re.fullmatch(self.pattern or "", topic) is not None
        return any(tp.topic == topic for tp in self.assigned)


@dataclass(frozen=True, slots=True)
class ReadOptions:
    bootstrap_servers: str
    subscription: Subscription
    starting: OffsetSpec
    ending: OffsetSpec
    min_partitions: int | None
    max_offsets_per_trigger: int | None
    fail_on_data_loss: bool
    include_headers: bool
    poll_timeout_ms: int
    by_timestamp_strategy: str
    arrow: bool
    consumer_props: Mapping[str, str]

    def client_props(self) -> dict[str, str]:
        """Native client properties (``bootstrap.servers`` plus every ``kafka.`` option)."""
        return {"bootstrap.servers": self.bootstrap_servers, **self.consumer_props}


# The exactly-once writer's transaction.timeout.ms unless kafka.transaction.timeout.ms says
# otherwise (milliseconds). A decided transaction must still be open when the driver's
# EndTxn comes, which after a driver crash is only once the query has restarted: the timeout
# covers a task's writing, the commit and a restart. An abandoned transaction (its task's
# id not used again) holds read_committed readers of its partitions back at most this long.
DEFAULT_TRANSACTION_TIMEOUT_MS = 300_000
DEFAULT_COMMIT_LOG = "_kraftlog_spark_commits"
TRANSACTIONAL_ID_PREFIX_DEFAULT = "kraftlog-spark-"


@dataclass(frozen=True, slots=True)
class WriteOptions:
    """A writer's options. ``exactly_once``: tasks write in transactions the driver commits
    (:mod:`spark_integration.exactly_once`); then ``transactional_id_prefix`` names the
    tasks' transactional ids and the decision log key, and ``commit_log`` the decision log
    topic."""

    bootstrap_servers: str
    topic: str | None
    producer_props: Mapping[str, str]
    exactly_once: bool = False
    transactional_id_prefix: str | None = None
    commit_log: str = DEFAULT_COMMIT_LOG

    def client_props(self) -> dict[str, str]:
        """Producer properties: idempotent, acks=all, plus every ``kafka.`` option."""
        return {
            "bootstrap.servers": self.bootstrap_servers,
            "acks": "all",
            "enable.idempotence": "true",
            **self.producer_props,
        }

    def transactional_props(self, partition_id: int) -> dict[str, str]:
        """The producer properties of the task writing Spark partition ``partition_id``:
        the stable transactional id ``<prefix>-<partition_id>``, the writer's
        transaction.timeout.ms unless ``kafka.transaction.timeout.ms`` is given."""
        if self.transactional_id_prefix is None:
            raise OptionError("the exactly-once writer needs transactionalIdPrefix")
        return {
            "transaction.timeout.ms": str(DEFAULT_TRANSACTION_TIMEOUT_MS),
            **self.client_props(),
            "transactional.id": f"{self.transactional_id_prefix}-{partition_id}",
        }


def _lower(options: Mapping[str, Any]) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in options.items():
        low = str(key).lower()
        if low in out:
            raise OptionError(f"option {key!r} is given twice (option names ignore case)")
        out[low] = "" if value is None else str(value)
    return out


def _bootstrap(opts: dict[str, str]) -> str:
    given = [k for k in _BOOTSTRAP_KEYS if opts.get(k)]
    if not given:
        raise OptionError(
            "option kafka.bootstrap.servers is required (host:port list of kraftlog brokers)"
        )
    if len(given) == 2 and opts[given[0]] != opts[given[1]]:
        raise OptionError(
            "kafka.bootstrap.servers and bootstrap.servers disagree; give only one of them"
        )
    return opts[given[0]]


def _client_props(
    opts: dict[str, str], config_cls: type, forbidden: Mapping[str, str]
) -> dict[str, str]:
    """The ``kafka.`` options as client properties, checked by the client's config class."""
    props: dict[str, str] = {}
    for key, value in opts.items():
        if not key.startswith("kafka.") or key == "kafka.bootstrap.servers":
            continue
        if key in forbidden:
            raise OptionError(f"option {key} cannot be set: {forbidden[key]}")
        props[key[len("kafka.") :]] = value
    try:
        client_config(config_cls, {"bootstrap.servers": "127.0.0.1:9092", **props})
    except ConfigError as e:
        raise OptionError(f"kafka.* options: {e}") from None
    return props


def _subscription(opts: dict[str, str]) -> Subscription:
    given = [k for k in _SUBSCRIBE_KEYS if k.lower() in opts]
    if len(given) != 1:
        which = ", ".join(given) if given else "none"
        raise OptionError(
            f"give exactly one of subscribe, subscribePattern or assign (got {which})"
        )
    kind = given[0]
    raw = opts[kind.lower()].strip()
    if kind == "subscribe":
        topics = tuple(t.strip() for t in raw.split(",") if t.strip())
        if not topics:
            raise OptionError("subscribe: give a comma-separated list of topic names")
        return Subscription(kind, topics=topics)
    if kind == "subscribePattern":
        if not raw:
            raise OptionError("subscribePattern: give a regular expression")
        try:
            re.compile(raw)
        except re.error as e:
            raise OptionError(
                f"subscribePattern {raw!r} is not a regular expression: {e}"
            ) from None
        return Subscription(kind, pattern=raw)
    try:
        parsed = json.loads(raw)
    except json.JSONDecodeError as e:
        raise OptionError(f'assign must be JSON like {{"topicA":[0,1]}}: {e}') from None
    if not isinstance(parsed, dict) or not parsed:
        raise OptionError('assign must be a non-empty JSON object like {"topicA":[0,1]}')
    assigned = []
    for topic, parts in parsed.items():
        if not isinstance(parts, list) or not all(
            isinstance(p, int) and not isinstance(p, bool) and p >= 0 for p in parts
        ):
            raise OptionError(f"assign: topic {topic!r} needs a list of partition numbers")
        assigned.extend(TopicPartition(topic, p) for p in parts)
    return Subscription(kind, assigned=tuple(sorted(set(assigned))))


def _offset_spec(opts: dict[str, str], prefix: str, default: OffsetSpec) -> OffsetSpec:
    names = [f"{prefix}Offsets", f"{prefix}Timestamp", f"{prefix}OffsetsByTimestamp"]
    given = [n for n in names if n.lower() in opts]
    if len(given) > 1:
        raise OptionError(f"options {' and '.join(given)} conflict: give only one of them")
    if not given:
        return default
    name = given[0]
    raw = opts[name.lower()].strip()
    try:
        if name.endswith("OffsetsByTimestamp"):
            table = parse_partition_json(raw, name)
            for tp, ts in table.items():
                if ts < 0:
                    raise OptionError(f"{name}: timestamp {ts} of {tp.topic}-{tp.partition} < 0")
            return PartitionTimestamps(per_partition=table)
        if name.endswith("Timestamp"):
            return PartitionTimestamps(global_ms=_timestamp(name, raw))
        return parse_offset_spec(raw, name)
    except ValueError as e:
        raise OptionError(str(e)) from None


def _timestamp(name: str, raw: str) -> int:
    try:
        value = int(raw)
    except ValueError:
        raise OptionError(f"{name}: expected milliseconds since the epoch, got {raw!r}") from None
    if value < 0:
        raise OptionError(f"{name}: {value} is negative")
    return value


def parse_read_options(options: Mapping[str, Any], *, streaming: bool) -> ReadOptions:
    """Check and parse a reader's options (``streaming`` for readStream, which has other
    defaults and no ending offsets). Raises :class:`OptionError`."""
    opts = _lower(options)
    for key in opts:
        if key in _UNSUPPORTED:
            raise OptionError(f"option {_UNSUPPORTED[key]} is not supported by kraftlog")
        if key not in _READ_KEYS and not key.startswith("kafka."):
            raise OptionError(
                f"unknown option {key!r} for format kraftlog; known options: "
                + ", ".join(sorted(set(_READ_KEYS.values())))
                + ", kafka.<consumer property>"
            )
    bootstrap = _bootstrap(opts)
    consumer_props = _client_props(opts, ConsumerConfig, _FORBIDDEN_CONSUMER_KEYS)
    subscription = _subscription(opts)
    scalar_props = {_READ_KEYS[k]: v for k, v in opts.items() if k in _READ_KEYS}
    try:
        scalars = from_props(_ScalarReadOptions, scalar_props)
    except ConfigError as e:
        raise OptionError(str(e)) from None
    starting = _offset_spec(opts, "starting", LATEST if streaming else EARLIEST)
    ending = _offset_spec(opts, "ending", LATEST)
    if streaming:
        for name in ("endingOffsets", "endingTimestamp", "endingOffsetsByTimestamp"):
            if name.lower() in opts:
                raise OptionError(f"option {name} is for batch queries only (not readStream)")
    else:
        if scalars.max_offsets_per_trigger is not None:
            raise OptionError("option maxOffsetsPerTrigger is for streaming queries only")
        if starting == LATEST or (
            isinstance(starting, PartitionOffsets) and LATEST.value in starting.offsets.values()
        ):
            raise OptionError(
                "startingOffsets latest (-1) is not allowed in a batch query: it reads nothing"
            )
        if ending == EARLIEST or (
            isinstance(ending, PartitionOffsets) and EARLIEST.value in ending.offsets.values()
        ):
            raise OptionError("endingOffsets earliest (-2) is not allowed in a batch query")
    for name, spec in (("starting", starting), ("ending", ending)):
        table = (
            spec.offsets
            if isinstance(spec, PartitionOffsets)
            else spec.per_partition
            if isinstance(spec, PartitionTimestamps)
            else None
        )
        if (
            subscription.kind == "assign"
            and table is not None
            and set(table) != set(subscription.assigned)
        ):
            raise OptionError(
                f"{name} offsets name partitions {sorted(table)} but assign names "
                f"{sorted(subscription.assigned)}: they must be the same"
            )
    return ReadOptions(
        bootstrap_servers=bootstrap,
        subscription=subscription,
        starting=starting,
        ending=ending,
        min_partitions=scalars.min_partitions,
        max_offsets_per_trigger=scalars.max_offsets_per_trigger,
        fail_on_data_loss=scalars.fail_on_data_loss,
        include_headers=scalars.include_headers,
        poll_timeout_ms=scalars.poll_timeout_ms,
        by_timestamp_strategy=scalars.by_timestamp_strategy,
        arrow=scalars.arrow,
        consumer_props=consumer_props,
    )


_FORBIDDEN_PRODUCER_KEYS = {
    "kafka.acks": "the writer always uses acks=all (idempotent producer)",
    "kafka.enable.idempotence": "the writer always uses the idempotent producer",
    "kafka.key.serializer": "the key column is written as bytes",
    "kafka.value.serializer": "the value column is written as bytes",
    "kafka.transactional.id": "the exactly-once writer sets it from transactionalIdPrefix",
}
_EXACTLY_ONCE_KEYS = ("exactlyOnce", "transactionalIdPrefix", "exactlyOnce.commitLog")
_WRITE_KEYS = {k.lower(): k for k in ("topic", *_BOOTSTRAP_KEYS, *_EXACTLY_ONCE_KEYS)}
# Kafka's legal topic names (the prefix also becomes part of transactional ids).
_NAME = re.compile(r"[A-Za-z0-9._-]{1,200}")


def _flag(opts: dict[str, str], name: str, default: bool) -> bool:
    raw = opts.get(name.lower())
    if raw is None:
        return default
    if raw.strip().lower() not in ("true", "false"):
        raise OptionError(f"{name}: expected true or false, got {raw!r}")
    return raw.strip().lower() == "true"


def _name(opts: dict[str, str], name: str, default: str | None) -> str | None:
    raw = opts.get(name.lower())
    if raw is None:
        return default
    value = raw.strip()
    if not _NAME.fullmatch(value):
        raise OptionError(
            f"{name}: {raw!r} must be 1-200 characters of letters, digits, '.', '_' or '-'"
        )
    return value


def parse_write_options(options: Mapping[str, Any], *, streaming: bool = False) -> WriteOptions:
    """Check and parse a writer's options (``streaming`` for writeStream: exactlyOnce is on
    by default there, off for batch writes). Raises :class:`OptionError`."""
    opts = _lower(options)
    if streaming:
        # Spark hands a streaming sink the query's checkpoint location too; it is Spark's.
        opts.pop("checkpointlocation", None)
    for key in opts:
        if key not in _WRITE_KEYS and not key.startswith("kafka."):
            raise OptionError(
                f"unknown option {key!r} for writing format kraftlog; known options: "
                "kafka.bootstrap.servers (or bootstrap.servers), topic, exactlyOnce, "
                "transactionalIdPrefix, exactlyOnce.commitLog, kafka.<producer property>"
            )
    bootstrap = _bootstrap(opts)
    producer_props = _client_props(opts, ProducerConfig, _FORBIDDEN_PRODUCER_KEYS)
    topic = opts.get("topic", "").strip() or None
    exactly_once = _flag(opts, "exactlyOnce", default=streaming)
    if not exactly_once:
        for name in (*_EXACTLY_ONCE_KEYS[1:], "kafka.transaction.timeout.ms"):
            if name.lower() in opts:
                raise OptionError(f"option {name} needs exactlyOnce=true")
        return WriteOptions(bootstrap, topic, producer_props)
    default_prefix = None if topic is None else TRANSACTIONAL_ID_PREFIX_DEFAULT + topic
    prefix = _name(opts, "transactionalIdPrefix", default_prefix)
    if prefix is None:
        raise OptionError(
            "exactlyOnce=true without the topic option needs transactionalIdPrefix "
            "(unique to this query: it names the tasks' transactional ids)"
        )
    commit_log = _name(opts, "exactlyOnce.commitLog", DEFAULT_COMMIT_LOG)
    assert commit_log is not None
    return WriteOptions(bootstrap, topic, producer_props, True, prefix, commit_log)
