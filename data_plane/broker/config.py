"""BrokerConfig: the Kafka protocol server's settings, with Kafka's property names.

Listeners are node config (``listeners`` / ``advertised.listeners``, read by deploy); this
class holds what the server itself enforces. Keys that Kafka has keep Kafka's name and default
unless noted; ``kraftlog.*`` keys are this project's own.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from common.configdef import prop

EVENT_LOOPS = ("auto", "uvloop", "asyncio")


@dataclass(frozen=True, slots=True)
class BrokerConfig:
    socket_request_max_bytes: int = field(
        default=104_857_600,
        metadata=prop(
            "socket.request.max.bytes",
            min=64,
            doc="Largest request frame accepted; a larger size prefix closes the connection "
            "before the body is read.",
        ),
    )
    socket_send_buffer_bytes: int = field(
        default=102_400,
        metadata=prop(
            "socket.send.buffer.bytes",
            min=-1,
            doc="SO_SNDBUF of client connections; -1 keeps the OS default.",
        ),
    )
    socket_receive_buffer_bytes: int = field(
        default=102_400,
        metadata=prop(
            "socket.receive.buffer.bytes",
            min=-1,
            doc="SO_RCVBUF of client connections; -1 keeps the OS default.",
        ),
    )
    queued_max_requests: int = field(
        default=500,
        metadata=prop(
            "queued.max.requests",
            min=1,
            doc="Requests one connection may have in flight (read, not yet answered). When "
            "full the broker stops reading that socket (back-pressure). Kafka bounds a shared "
            "queue with this key; kraftlog bounds each connection.",
        ),
    )
    connections_max_idle_ms: int = field(
        default=600_000,
        metadata=prop(
            "connections.max.idle.ms",
            min=1000,
            doc="A connection with no request in flight and no traffic for this long is closed.",
        ),
    )
    auto_create_topics_enable: bool = field(
        default=False,
        metadata=prop(
            "auto.create.topics.enable",
            doc="Metadata requests for unknown topics create them (num.partitions, "
            "default.replication.factor). Off by default in kraftlog (Kafka: on).",
        ),
    )
    request_timeout_ms: int = field(
        default=30_000,
        metadata=prop(
            "request.timeout.ms",
            min=1,
            doc="Upper bound on how long the broker waits for the controller on a forwarded "
            "admin request and on a Produce acks=all (the request's own timeout_ms is used "
            "when smaller).",
        ),
    )
    fetch_max_bytes: int = field(
        default=57_671_680,
        metadata=prop(
            "fetch.max.bytes",
            min=1024,
            doc="Largest Fetch response the broker builds, whatever the client asks for (the "
            "first batch is still whole, KIP-74).",
        ),
    )
    fetch_max_wait_cap_ms: int = field(
        default=30_000,
        metadata=prop(
            "kraftlog.fetch.max.wait.cap.ms",
            min=0,
            doc="A Fetch's max_wait_ms is capped at this many ms.",
        ),
    )
    max_incremental_fetch_session_cache_slots: int = field(
        default=1000,
        metadata=prop(
            "max.incremental.fetch.session.cache.slots",
            min=0,
            doc="Incremental fetch sessions (KIP-227) the broker keeps; 0 turns sessions off "
            "(every fetch is answered in full). A full cache gives a new session the slot of "
            "one idle for 2 minutes, or a follower's new session the slot of a consumer's.",
        ),
    )
    purgatory_max_operations: int = field(
        default=10_000,
        metadata=prop(
            "kraftlog.purgatory.max.operations",
            min=1,
            doc="Delayed Fetch and Produce requests parked at once per kind; beyond it a new one "
            "completes at once (a fetch answers with what it has, a produce times out).",
        ),
    )
    fetch_zero_copy_enable: bool = field(
        default=True,
        metadata=prop(
            "kraftlog.fetch.zero.copy.enable",
            doc="Send fetched records with os.sendfile straight from the segment; false reads "
            "them into memory and sends them (for comparison benchmarks).",
        ),
    )
    replica_high_watermark_checkpoint_interval_ms: int = field(
        default=5000,
        metadata=prop(
            "replica.high.watermark.checkpoint.interval.ms",
            min=100,
            doc="How often the high watermarks are written to replication-offset-checkpoint.",
        ),
    )
    event_loop: str = field(
        default="auto",
        metadata=prop(
            "kraftlog.event.loop",
            choices=EVENT_LOOPS,
            doc="The server's event loop: uvloop, asyncio, or auto (uvloop when installed).",
        ),
    )
    admin_threads: int = field(
        default=4,
        metadata=prop(
            "kraftlog.admin.threads",
            min=1,
            max=64,
            doc="Threads that forward admin requests to the controller (blocking gRPC calls "
            "never run on the event loop).",
        ),
    )
    replica_lag_time_max_ms: int = field(
        default=30_000,
        metadata=prop(
            "replica.lag.time.max.ms",
            min=1,
            doc="A follower that has not caught up to the leader's log end offset for this long "
            "is removed from the ISR (through the controller).",
        ),
    )
    replica_fetch_max_bytes: int = field(
        default=1_048_576,
        metadata=prop(
            "replica.fetch.max.bytes",
            min=1024,
            doc="Bytes a replica fetch asks for per partition (the first batch is whole even "
            "when larger).",
        ),
    )
    replica_fetch_response_max_bytes: int = field(
        default=10_485_760,
        metadata=prop(
            "replica.fetch.response.max.bytes",
            min=1024,
            doc="Bytes a replica fetch asks for in the whole response.",
        ),
    )
    replica_fetch_wait_max_ms: int = field(
        default=500,
        metadata=prop(
            "replica.fetch.wait.max.ms",
            min=0,
            doc="How long a replica fetch waits on the leader for data (long poll; an append "
            "on the leader answers it at once).",
        ),
    )
    replica_fetch_min_bytes: int = field(
        default=1,
        metadata=prop(
            "replica.fetch.min.bytes",
            min=1,
            doc="Bytes a replica fetch waits for before the leader answers.",
        ),
    )
    replica_fetch_backoff_ms: int = field(
        default=1000,
        metadata=prop(
            "replica.fetch.backoff.ms",
            min=0,
            doc="Pause of a replica fetcher after an error before it tries again.",
        ),
    )
    inter_broker_listener_name: str = field(
        default="",
        metadata=prop(
            "inter.broker.listener.name",
            doc="The listener replica fetchers connect to on the other brokers (empty = this "
            "broker's first listener). Its security protocol must be PLAINTEXT or SSL: over SSL "
            "the fetcher presents this broker's ssl.keystore.location certificate (give its "
            "principal super.users or ClusterAction when the authorizer is on); SASL listeners "
            "are refused for inter-broker traffic.",
        ),
    )
    replica_socket_timeout_ms: int = field(
        default=30_000,
        metadata=prop(
            "replica.socket.timeout.ms",
            min=100,
            doc="Bound on one replica fetcher request (beyond replica.fetch.wait.max.ms); on "
            "expiry the connection is closed and re-opened after the backoff.",
        ),
    )
    num_replica_fetchers: int = field(
        default=1,
        metadata=prop(
            "num.replica.fetchers",
            min=1,
            max=16,
            doc="Fetcher tasks per source broker; partitions are spread over them by hash.",
        ),
    )
    producer_id_expiration_ms: int = field(
        default=86_400_000,
        metadata=prop(
            "producer.id.expiration.ms",
            min=1,
            doc="A partition forgets an idempotent producer this long after its newest batch "
            "timestamp; its next batch with a nonzero sequence then gets UNKNOWN_PRODUCER_ID.",
        ),
    )
    producer_id_expiration_check_interval_ms: int = field(
        default=600_000,
        metadata=prop(
            "producer.id.expiration.check.interval.ms",
            min=1,
            doc="How often partitions look for expired producer ids.",
        ),
    )
    # --- transaction coordinator (docs/transactions.md) --------------------------------------
    transaction_state_log_num_partitions: int = field(
        default=50,
        metadata=prop(
            "transaction.state.log.num.partitions",
            min=1,
            doc="Partitions of __transaction_state when the broker creates it (on the first "
            "FindCoordinator for a transactional id); an id lives in partition "
            "abs(hash(transactional.id)) % this.",
        ),
    )
    transaction_state_log_replication_factor: int = field(
        default=3,
        metadata=prop(
            "transaction.state.log.replication.factor",
            min=1,
            doc="Replication factor of __transaction_state. Until that many brokers are "
            "registered, FindCoordinator answers COORDINATOR_NOT_AVAILABLE.",
        ),
    )
    transaction_state_log_min_isr: int = field(
        default=2,
        metadata=prop(
            "transaction.state.log.min.isr",
            min=1,
            doc="min.insync.replicas of __transaction_state (capped at its replication factor).",
        ),
    )
    transaction_state_log_segment_bytes: int = field(
        default=104_857_600,
        metadata=prop(
            "transaction.state.log.segment.bytes",
            min=1024,
            doc="segment.bytes of __transaction_state.",
        ),
    )
    transaction_max_timeout_ms: int = field(
        default=900_000,
        metadata=prop(
            "transaction.max.timeout.ms",
            min=1,
            doc="The largest transaction.timeout.ms a producer may ask for "
            "(INVALID_TRANSACTION_TIMEOUT above it).",
        ),
    )
    transactional_id_expiration_ms: int = field(
        default=604_800_000,
        metadata=prop(
            "transactional.id.expiration.ms",
            min=1,
            doc="A transactional id with no transaction in progress is forgotten this long "
            "after its last update.",
        ),
    )
    transaction_abort_timed_out_transaction_cleanup_interval_ms: int = field(
        default=10_000,
        metadata=prop(
            "transaction.abort.timed.out.transaction.cleanup.interval.ms",
            min=1,
            doc="How often the coordinator aborts transactions open longer than their timeout.",
        ),
    )
    transaction_remove_expired_transaction_cleanup_interval_ms: int = field(
        default=3_600_000,
        metadata=prop(
            "transaction.remove.expired.transaction.cleanup.interval.ms",
            min=1,
            doc="How often the coordinator removes expired transactional ids.",
        ),
    )
    transaction_partition_verification_enable: bool = field(
        default=True,
        metadata=prop(
            "transaction.partition.verification.enable",
            doc="Partition leaders ask the transaction coordinator whether a partition is in "
            "the producer's transaction before appending the transaction's first batch there "
            "(KIP-890); a batch it does not confirm gets INVALID_TXN_STATE.",
        ),
    )
    transaction_marker_retry_backoff_ms: int = field(
        default=100,
        metadata=prop(
            "kraftlog.transaction.marker.retry.backoff.ms",
            min=1,
            doc="Pause before writing a transaction marker again after a retriable error "
            "(the partition's leader moved, not enough replicas).",
        ),
    )
    # --- group coordinator (consumer groups and committed offsets; docs/groups.md) -----------
    offsets_topic_num_partitions: int = field(
        default=50,
        metadata=prop(
            "offsets.topic.num.partitions",
            min=1,
            doc="Partitions of __consumer_offsets when the broker creates it (on the first "
            "FindCoordinator). A group lives in partition abs(hash(group.id)) % this.",
        ),
    )
    offsets_topic_replication_factor: int = field(
        default=3,
        metadata=prop(
            "offsets.topic.replication.factor",
            min=1,
            doc="Replication factor of __consumer_offsets. Until that many brokers are "
            "registered, FindCoordinator answers COORDINATOR_NOT_AVAILABLE (as Kafka).",
        ),
    )
    offsets_topic_segment_bytes: int = field(
        default=104_857_600,
        metadata=prop(
            "offsets.topic.segment.bytes",
            min=1024,
            doc="segment.bytes of __consumer_offsets (small segments compact sooner).",
        ),
    )
    offsets_commit_timeout_ms: int = field(
        default=5000,
        metadata=prop(
            "offsets.commit.timeout.ms",
            min=1,
            doc="How long an offset commit or group metadata write waits for all in-sync "
            "replicas of its __consumer_offsets partition.",
        ),
    )
    offsets_load_buffer_size: int = field(
        default=5_242_880,
        metadata=prop(
            "offsets.load.buffer.size",
            min=1024,
            doc="Bytes read per step when loading groups and offsets from a __consumer_offsets "
            "partition this broker became leader of.",
        ),
    )
    offsets_retention_minutes: int = field(
        default=10_080,
        metadata=prop(
            "offsets.retention.minutes",
            min=1,
            doc="Committed offsets of a group expire this long after the group became empty "
            "(after their commit, for groups that never had members).",
        ),
    )
    offsets_retention_check_interval_ms: int = field(
        default=600_000,
        metadata=prop(
            "offsets.retention.check.interval.ms",
            min=1,
            doc="How often expired offsets are looked for.",
        ),
    )
    offset_metadata_max_bytes: int = field(
        default=4096,
        metadata=prop(
            "offset.metadata.max.bytes",
            min=0,
            doc="Longest metadata string of a committed offset (else OFFSET_METADATA_TOO_LARGE).",
        ),
    )
    group_initial_rebalance_delay_ms: int = field(
        default=3000,
        metadata=prop(
            "group.initial.rebalance.delay.ms",
            min=0,
            doc="The first rebalance of an empty group waits this long for more members (and "
            "again while new ones keep arriving, up to the rebalance timeout).",
        ),
    )
    group_min_session_timeout_ms: int = field(
        default=6000,
        metadata=prop(
            "group.min.session.timeout.ms",
            min=0,
            doc="Smallest session.timeout.ms a member may ask for (else INVALID_SESSION_TIMEOUT).",
        ),
    )
    group_max_session_timeout_ms: int = field(
        default=1_800_000,
        metadata=prop(
            "group.max.session.timeout.ms",
            min=1,
            doc="Largest session.timeout.ms a member may ask for (else INVALID_SESSION_TIMEOUT).",
        ),
    )
    group_max_size: int = field(
        default=2_147_483_647,
        metadata=prop(
            "group.max.size",
            min=1,
            doc="Members a group may have; a further join gets GROUP_MAX_SIZE_REACHED.",
        ),
    )
    group_coordinator_rebalance_protocols: tuple[str, ...] = field(
        default=("classic", "consumer"),
        metadata=prop(
            "group.coordinator.rebalance.protocols",
            choices=("classic", "consumer"),
            doc="Group protocols served, comma-separated: classic (JoinGroup/SyncGroup) and "
            "consumer (KIP-848 ConsumerGroupHeartbeat).",
        ),
    )
    group_consumer_session_timeout_ms: int = field(
        default=45_000,
        metadata=prop(
            "group.consumer.session.timeout.ms",
            min=1,
            doc="A consumer-protocol member that has not heartbeaten for this long is removed "
            "and its partitions reassigned.",
        ),
    )
    group_consumer_heartbeat_interval_ms: int = field(
        default=5_000,
        metadata=prop(
            "group.consumer.heartbeat.interval.ms",
            min=1,
            doc="How often consumer-protocol members are told to heartbeat.",
        ),
    )
    group_consumer_assignors: tuple[str, ...] = field(
        default=("uniform", "range"),
        metadata=prop(
            "group.consumer.assignors",
            choices=("uniform", "range"),
            doc="Server-side assignors of consumer-protocol groups, comma-separated (uniform, "
            "range); the first is used unless the members ask for another.",
        ),
    )
    group_consumer_max_size: int = field(
        default=2_147_483_647,
        metadata=prop(
            "group.consumer.max.size",
            min=1,
            doc="Members a consumer-protocol group may have; a further join gets "
            "GROUP_MAX_SIZE_REACHED.",
        ),
    )
