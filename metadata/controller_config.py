"""The quorum controller's configuration (Kafka's property names, via common.configdef)."""

from __future__ import annotations

from dataclasses import dataclass, field

from common.configdef import prop
from metadata.features import LATEST_LEVEL, SUPPORTED

# Kafka's PRODUCER_ID_BLOCK_SIZE: ids handed to a broker per AllocateProducerIds call.
PRODUCER_ID_BLOCK_SIZE = 1000


@dataclass(frozen=True, slots=True)
class ControllerConfig:
    """Settings of the active controller. Every voter should use the same values: a new active
    controller applies its own, and topics keep what their records say."""

    bootstrap_metadata_version: int = field(
        default=LATEST_LEVEL,
        metadata=prop(
            "bootstrap.metadata.version",
            min=SUPPORTED.min_level,
            max=SUPPORTED.max_level,
            doc="The metadata.version level the first active controller of a new cluster "
            "finalizes (kraftlog features describe lists the levels; later changes go through "
            "kraftlog features upgrade).",
        ),
    )
    broker_session_timeout_ms: int = field(
        default=9000,
        metadata=prop(
            "broker.session.timeout.ms",
            min=100,
            doc="A broker that has not heartbeated for this long is fenced and loses leadership.",
        ),
    )
    broker_heartbeat_interval_ms: int = field(
        default=2000,
        metadata=prop(
            "broker.heartbeat.interval.ms",
            min=10,
            doc="How often brokers heartbeat to the controller (reported to brokers).",
        ),
    )
    num_partitions: int = field(
        default=1,
        metadata=prop(
            "num.partitions", min=1, doc="Partitions of a topic created without a count."
        ),
    )
    default_replication_factor: int = field(
        default=1,
        metadata=prop(
            "default.replication.factor",
            min=1,
            doc="Replication factor of a topic created without one.",
        ),
    )
    unclean_leader_election_enable: bool = field(
        default=False,
        metadata=prop(
            "unclean.leader.election.enable",
            topic="unclean.leader.election.enable",
            doc="Elect a replica outside the ISR when no ISR member is alive (may lose data).",
        ),
    )
    min_insync_replicas: int = field(
        default=1,
        metadata=prop(
            "min.insync.replicas",
            topic="min.insync.replicas",
            min=1,
            doc="ISR size below which acks=all produce requests are rejected.",
        ),
    )
    controller_listener_names: tuple[str, ...] = field(
        default=("CONTROLLER",),
        metadata=prop(
            "controller.listener.names",
            doc="Listener names used by the controller quorum's gRPC service.",
        ),
    )
    auto_leader_rebalance_enable: bool = field(
        default=True,
        metadata=prop(
            "auto.leader.rebalance.enable",
            doc="Periodically move leadership back to each partition's preferred replica.",
        ),
    )
    leader_imbalance_check_interval_seconds: int = field(
        default=300,
        metadata=prop(
            "leader.imbalance.check.interval.seconds",
            min=1,
            doc="How often the active controller runs preferred-leader rebalancing.",
        ),
    )
    delete_topic_enable: bool = field(
        default=True,
        metadata=prop("delete.topic.enable", doc="Whether DeleteTopics is allowed."),
    )
    max_records_per_user_op: int = field(
        default=100_000,
        metadata=prop(
            "controller.max.records.per.user.op",
            min=1,
            doc="Largest number of metadata records one admin request may produce "
            "(one per partition, one per topic); larger requests get POLICY_VIOLATION.",
        ),
    )
    max_partitions_per_topic: int = field(
        default=100_000,
        metadata=prop(
            "controller.max.partitions.per.topic",
            min=1,
            doc="Largest partition count a topic may have.",
        ),
    )
    append_timeout_ms: int = field(
        default=15_000,
        metadata=prop(
            "controller.append.timeout.ms",
            min=100,
            doc="How long the controller waits for one batch of records to commit.",
        ),
    )
    fetch_metadata_max_records: int = field(
        default=50_000,
        metadata=prop(
            "controller.fetch.metadata.max.records",
            min=1,
            doc="Most metadata records one FetchMetadata response carries.",
        ),
    )
