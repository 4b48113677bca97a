"""Client configuration: Kafka's producer, consumer and admin property names.

Each client takes a mapping of Kafka property names to values (``{"bootstrap.servers":
"127.0.0.1:9092", "linger.ms": 5}``); values may be strings (as in a properties file) or Python
values. :func:`client_config` rejects unknown keys with :class:`ConfigError` naming the key, so
a typo such as ``lingr.ms`` fails at construction instead of being silently ignored.

Idempotence follows Kafka 3.x: ``enable.idempotence`` unset means "on unless ``acks``,
``retries`` or ``max.in.flight.requests.per.connection`` conflict" (then quietly off); set to
true, a conflict is a :class:`ConfigError`. :attr:`ProducerConfig.idempotent` is the outcome.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from common.configdef import ConfigError, from_props, known_keys, prop
from common.security.config import PLAINTEXT, SASL_MECHANISMS, SECURITY_PROTOCOLS

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

T = TypeVar("T", bound="DataclassInstance")

_MIB = 1024 * 1024
COMPRESSION_TYPES = ("none", "gzip", "snappy", "lz4", "zstd")
ACKS_CHOICES = ("all", "-1", "0", "1")
OFFSET_RESET_CHOICES = ("earliest", "latest", "none")
PARTITIONERS = ("default", "murmur2_random")
# The broker remembers a producer's last 5 batches per partition, so at most 5 may be in flight.
MAX_IDEMPOTENT_IN_FLIGHT = 5


@dataclass(frozen=True, slots=True)
class CommonClientConfig:
    bootstrap_servers: tuple[str, ...] = field(
        default=("127.0.0.1:9092",),
        metadata=prop("bootstrap.servers", doc="host:port list used to find the cluster"),
    )
    client_id: str = field(default="kraftlog", metadata=prop("client.id"))
    request_timeout_ms: int = field(
        default=30000, metadata=prop("request.timeout.ms", min=1, doc="wait for one response")
    )
    retry_backoff_ms: int = field(default=100, metadata=prop("retry.backoff.ms", min=0))
    metadata_max_age_ms: int = field(
        default=300000, metadata=prop("metadata.max.age.ms", min=0, doc="periodic refresh")
    )
    socket_connection_setup_timeout_ms: int = field(
        default=10000, metadata=prop("socket.connection.setup.timeout.ms", min=1)
    )
    receive_buffer_bytes: int = field(
        default=1 * _MIB, metadata=prop("receive.buffer.bytes", min=-1, doc="SO_RCVBUF; -1 = OS")
    )
    send_buffer_bytes: int = field(
        default=1 * _MIB, metadata=prop("send.buffer.bytes", min=-1, doc="SO_SNDBUF; -1 = OS")
    )
    # Security (docs/client.md): Kafka's / librdkafka's names; the PEM files as the broker
    # side uses them. kraftlog_client.client_security.client_security checks the combination.
    security_protocol: str = field(
        default=PLAINTEXT,
        metadata=prop(
            "security.protocol",
            choices=SECURITY_PROTOCOLS,
            doc="PLAINTEXT, SSL (TLS), SASL_PLAINTEXT or SASL_SSL (TLS, then SASL)",
        ),
    )
    sasl_mechanism: str = field(
        default="PLAIN",
        metadata=prop("sasl.mechanism", choices=SASL_MECHANISMS, doc="SASL mechanism"),
    )
    sasl_username: str | None = field(default=None, metadata=prop("sasl.username"))
    sasl_password: str | None = field(
        default=None, repr=False, metadata=prop("sasl.password", doc="never logged")
    )
    ssl_truststore_location: str | None = field(
        default=None,
        metadata=prop("ssl.truststore.location", doc="PEM file of the CAs trusted for brokers"),
    )
    ssl_keystore_location: str | None = field(
        default=None,
        metadata=prop(
            "ssl.keystore.location",
            doc="PEM client certificate chain (and key unless ssl.key.location is set)",
        ),
    )
    ssl_key_location: str | None = field(
        default=None, metadata=prop("ssl.key.location", doc="PEM private key of the client")
    )
    ssl_key_password: str | None = field(
        default=None, repr=False, metadata=prop("ssl.key.password")
    )
    ssl_endpoint_identification_algorithm: str = field(
        default="https",
        metadata=prop(
            "ssl.endpoint.identification.algorithm",
            doc="'https' checks the broker host name against its certificate; '' does not",
        ),
    )


@dataclass(frozen=True, slots=True)
class ProducerConfig(CommonClientConfig):
    acks: str = field(
        default="all",
        metadata=prop(
            "acks",
            choices=ACKS_CHOICES,
            doc="all/-1: the full ISR; 1: the leader; 0: no response (1 and 0 rule out "
            "idempotence)",
        ),
    )
    batch_size: int = field(
        default=16384, metadata=prop("batch.size", min=1, doc="bytes per partition batch")
    )
    linger_ms: int = field(default=5, metadata=prop("linger.ms", min=0))
    buffer_memory: int = field(
        default=32 * _MIB, metadata=prop("buffer.memory", min=1, doc="bytes of unsent records")
    )
    max_block_ms: int = field(
        default=60000,
        metadata=prop("max.block.ms", min=0, doc="send() waits this long for buffer or metadata"),
    )
    compression_type: str = field(
        default="none", metadata=prop("compression.type", choices=COMPRESSION_TYPES)
    )
    retries: int = field(default=2147483647, metadata=prop("retries", min=0))
    delivery_timeout_ms: int = field(
        default=120000,
        metadata=prop("delivery.timeout.ms", min=1, doc="upper bound from send() to outcome"),
    )
    max_in_flight_requests_per_connection: int = field(
        default=5, metadata=prop("max.in.flight.requests.per.connection", min=1)
    )
    max_request_size: int = field(
        default=1 * _MIB, metadata=prop("max.request.size", min=1, doc="largest record/batch")
    )
    enable_idempotence: bool | None = field(
        default=None,
        metadata=prop(
            "enable.idempotence",
            doc="producer ids and sequences: retries never duplicate or reorder; unset = on "
            "unless acks/retries/max.in.flight conflict",
        ),
    )
    transactional_id: str | None = field(
        default=None,
        metadata=prop(
            "transactional.id",
            doc="makes the producer transactional (init_transactions, begin/commit/abort); "
            "implies enable.idempotence",
        ),
    )
    transaction_timeout_ms: int = field(
        default=60000,
        metadata=prop(
            "transaction.timeout.ms",
            min=1,
            doc="the coordinator aborts a transaction open longer than this",
        ),
    )
    partitioner: str = field(
        default="default",
        metadata=prop(
            "partitioner",
            choices=PARTITIONERS,
            doc="murmur2 of the key (Java's and librdkafka murmur2_random); sticky for null keys",
        ),
    )

    def __post_init__(self) -> None:
        if self.transactional_id is not None and self.enable_idempotence is False:
            raise ConfigError("transactional.id needs enable.idempotence (unset or true)")
        if self.enable_idempotence or self.transactional_id is not None:
            conflicts = self._idempotence_conflicts()
            if conflicts:
                raise ConfigError(f"enable.idempotence=true needs {'; '.join(conflicts)}")

    def _idempotence_conflicts(self) -> list[str]:
        out = []
        if self.acks not in ("all", "-1"):
            out.append(f"acks=all (got {self.acks})")
        if self.retries <= 0:
            out.append(f"retries > 0 (got {self.retries})")
        if self.max_in_flight_requests_per_connection > MAX_IDEMPOTENT_IN_FLIGHT:
            out.append(
                f"max.in.flight.requests.per.connection <= {MAX_IDEMPOTENT_IN_FLIGHT} "
                f"(got {self.max_in_flight_requests_per_connection})"
            )
        return out

    @property
    def idempotent(self) -> bool:
        """Whether this producer is idempotent: explicitly enabled, or not set and nothing
        conflicts (Kafka 3.x disables the default quietly on a conflict)."""
        if self.enable_idempotence is None:
            return not self._idempotence_conflicts()
        return self.enable_idempotence

    @property
    def acks_value(self) -> int:
        """The wire value of ``acks``: -1, 0 or 1."""
        return -1 if self.acks in ("all", "-1") else int(self.acks)


@dataclass(frozen=True, slots=True)
class ConsumerConfig(CommonClientConfig):
    group_id: str | None = field(
        default=None,
        metadata=prop(
            "group.id",
            doc="consumer group: subscribe() shares partitions with the group's other members "
            "and positions resume from committed offsets",
        ),
    )
    group_instance_id: str | None = field(
        default=None,
        metadata=prop(
            "group.instance.id",
            doc="static membership: a restart within session.timeout.ms keeps the partitions",
        ),
    )
    session_timeout_ms: int = field(
        default=45000,
        metadata=prop("session.timeout.ms", min=1, doc="no heartbeat for this long: removed"),
    )
    heartbeat_interval_ms: int = field(default=3000, metadata=prop("heartbeat.interval.ms", min=1))
    max_poll_interval_ms: int = field(
        default=300000,
        metadata=prop(
            "max.poll.interval.ms",
            min=1,
            doc="no poll() for this long: the member leaves the group (also the rebalance timeout)",
        ),
    )
    enable_auto_commit: bool = field(default=True, metadata=prop("enable.auto.commit"))
    auto_commit_interval_ms: int = field(
        default=5000, metadata=prop("auto.commit.interval.ms", min=0)
    )
    partition_assignment_strategy: tuple[str, ...] = field(
        default=("range", "roundrobin"),
        metadata=prop(
            "partition.assignment.strategy",
            doc="assignor names in order of preference: range, roundrobin",
        ),
    )
    exclude_internal_topics: bool = field(
        default=True,
        metadata=prop("exclude.internal.topics", doc="pattern subscriptions skip __ topics"),
    )
    fetch_min_bytes: int = field(default=1, metadata=prop("fetch.min.bytes", min=0))
    fetch_max_wait_ms: int = field(default=500, metadata=prop("fetch.max.wait.ms", min=0))
    fetch_max_bytes: int = field(default=50 * _MIB, metadata=prop("fetch.max.bytes", min=1))
    max_partition_fetch_bytes: int = field(
        default=1 * _MIB, metadata=prop("max.partition.fetch.bytes", min=1)
    )
    max_poll_records: int = field(default=500, metadata=prop("max.poll.records", min=1))
    auto_offset_reset: str = field(
        default="latest", metadata=prop("auto.offset.reset", choices=OFFSET_RESET_CHOICES)
    )
    check_crcs: bool = field(default=True, metadata=prop("check.crcs"))
    isolation_level: str = field(
        default="read_uncommitted",
        metadata=prop("isolation.level", choices=("read_uncommitted", "read_committed")),
    )

    def __post_init__(self) -> None:
        if self.group_id is not None and self.heartbeat_interval_ms >= self.session_timeout_ms:
            raise ConfigError(
                f"heartbeat.interval.ms ({self.heartbeat_interval_ms}) must be lower than "
                f"session.timeout.ms ({self.session_timeout_ms})"
            )
        known = ("range", "roundrobin")
        for name in self.partition_assignment_strategy:
            if name not in known:
                raise ConfigError(
                    f"partition.assignment.strategy: unknown assignor {name!r}; known: "
                    + ", ".join(known)
                )
        if not self.partition_assignment_strategy:
            raise ConfigError("partition.assignment.strategy is empty")


@dataclass(frozen=True, slots=True)
class AdminConfig(CommonClientConfig):
    default_api_timeout_ms: int = field(default=60000, metadata=prop("default.api.timeout.ms"))


def client_config(cls: type[T], props: Mapping[str, Any] | None = None, **kwargs: Any) -> T:
    """Build ``cls`` from Kafka property names. Keyword arguments use underscores for dots
    (``linger_ms=5`` is ``linger.ms``). Unknown keys raise :class:`ConfigError`."""
    merged: dict[str, Any] = dict(props or {})
    for name, value in kwargs.items():
        merged[name.replace("_", ".")] = value
    known = known_keys(cls)
    unknown = sorted(k for k in merged if k not in known)
    if unknown:
        raise ConfigError(f"unknown {cls.__name__} properties: {', '.join(unknown)}")
    return from_props(cls, {k: _to_text(v) for k, v in merged.items()})


def _to_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return ",".join(str(v) for v in value)
    if value is None:
        return "null"
    return str(value)
