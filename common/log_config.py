"""LogConfig: the storage settings of one partition's log, under Kafka's property names.

Broker-level keys (``log.segment.bytes``) set the defaults in ``server.properties``; the
per-topic keys (``segment.bytes``) override them for one topic (see
:func:`common.configdef.with_overrides` with ``topic=True``). Immutable, thread-safe.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from common.configdef import ConfigError, prop

LONG_MAX = (1 << 63) - 1
INT_MAX = (1 << 31) - 1
MIB = 1024 * 1024
DAY_MS = 24 * 60 * 60 * 1000

DELETE = "delete"
COMPACT = "compact"
CREATE_TIME = "CreateTime"
LOG_APPEND_TIME = "LogAppendTime"


@dataclass(frozen=True, slots=True)
class LogConfig:
    segment_bytes: int = field(
        default=1024 * MIB,
        metadata=prop(
            "log.segment.bytes",
            topic="segment.bytes",
            min=14,
            max=INT_MAX,
            doc="Roll to a new segment when the active one would grow past this many bytes "
            "(positions in the .index are u32, so at most 2 GiB - 1).",
        ),
    )
    segment_ms: int = field(
        default=7 * DAY_MS,
        metadata=prop(
            "log.roll.ms",
            topic="segment.ms",
            min=1,
            doc="Roll a non-empty active segment this long after it was created (broker clock), "
            "so time retention can delete whole segments.",
        ),
    )
    index_interval_bytes: int = field(
        default=4096,
        metadata=prop(
            "log.index.interval.bytes",
            topic="index.interval.bytes",
            min=0,
            max=INT_MAX,
            doc="Bytes of batches between two entries of the sparse .index/.timeindex.",
        ),
    )
    segment_index_bytes: int = field(
        default=10 * MIB,
        metadata=prop(
            "log.index.size.max.bytes",
            topic="segment.index.bytes",
            min=12 * 2,
            max=INT_MAX,
            doc="Size each index file is preallocated to; a full index rolls the segment.",
        ),
    )
    retention_ms: int = field(
        default=7 * DAY_MS,
        metadata=prop(
            "log.retention.ms",
            topic="retention.ms",
            min=-1,
            doc="Delete closed segments whose newest timestamp is older than this; -1 keeps "
            "them forever.",
        ),
    )
    retention_bytes: int = field(
        default=-1,
        metadata=prop(
            "log.retention.bytes",
            topic="retention.bytes",
            min=-1,
            doc="Delete the oldest closed segments while the partition stays above this size "
            "without them; -1 = no size limit.",
        ),
    )
    flush_messages: int = field(
        default=LONG_MAX,
        metadata=prop(
            "log.flush.interval.messages",
            topic="flush.messages",
            min=1,
            doc="fsync the log once this many messages are unflushed; 1 fsyncs every append. "
            "Default: never by count (segments are flushed on roll and every flush.ms).",
        ),
    )
    flush_ms: int = field(
        default=60_000,
        metadata=prop(
            "log.flush.interval.ms",
            topic="flush.ms",
            min=0,
            doc="fsync unflushed data once the last flush is this old (checked by the log "
            "manager's maintenance). Kafka's default is never; kraftlog flushes every minute "
            "so the recovery point advances and restart recovery stays short.",
        ),
    )
    writeback_window_bytes: int = field(
        default=0,
        metadata=prop(
            "log.writeback.window.bytes",
            min=0,
            max=INT_MAX,
            doc="0 (the default, as Kafka) leaves writeback and the page cache to the kernel. "
            "Above 0: each time this many bytes were appended to the active segment, a "
            "background thread starts their writeback and drops the previous such range "
            "from the page cache (not a durability point), so about twice this much of a "
            "busy partition stays cached. Followers and tail consumers read from there; "
            "older reads go to disk. Worth it where the host takes back free guest memory "
            "(virtio-balloon free page reporting): new writes then reuse freed pages "
            "instead of faulting in new ones (docs/benchmarks.md).",
        ),
    )
    max_message_bytes: int = field(
        default=1048588,
        metadata=prop(
            "message.max.bytes",
            topic="max.message.bytes",
            min=0,
            max=INT_MAX,
            doc="The largest record batch (after compression) a producer may append.",
        ),
    )
    message_timestamp_type: str = field(
        default=CREATE_TIME,
        metadata=prop(
            "log.message.timestamp.type",
            topic="message.timestamp.type",
            choices=(CREATE_TIME, LOG_APPEND_TIME),
            doc="CreateTime keeps the producer's timestamps; LogAppendTime stamps each batch "
            "with the broker's clock on append.",
        ),
    )
    cleanup_policy: str = field(
        default=DELETE,
        metadata=prop(
            "log.cleanup.policy",
            topic="cleanup.policy",
            doc="Comma-separated list of delete and compact. delete: time/size retention "
            "removes old segments. compact: the log cleaner keeps the latest value per key "
            "(and removes tombstones after delete.retention.ms). compact,delete: both.",
        ),
    )
    min_cleanable_dirty_ratio: float = field(
        default=0.5,
        metadata=prop(
            "log.cleaner.min.cleanable.ratio",
            topic="min.cleanable.dirty.ratio",
            min=0.0,
            max=1.0,
            doc="Clean a compacted log once its dirty bytes (closed segments written since "
            "the last cleaning, below the high watermark) are at least this share of its "
            "cleanable bytes.",
        ),
    )
    min_compaction_lag_ms: int = field(
        default=0,
        metadata=prop(
            "log.cleaner.min.compaction.lag.ms",
            topic="min.compaction.lag.ms",
            min=0,
            doc="A segment is cleaned only once its newest timestamp is at least this old.",
        ),
    )
    max_compaction_lag_ms: int = field(
        default=LONG_MAX,
        metadata=prop(
            "log.cleaner.max.compaction.lag.ms",
            topic="max.compaction.lag.ms",
            min=1,
            doc="Clean a compacted log whatever its dirty ratio once its oldest uncleaned "
            "closed segment holds a batch older than this.",
        ),
    )
    delete_retention_ms: int = field(
        default=DAY_MS,
        metadata=prop(
            "log.cleaner.delete.retention.ms",
            topic="delete.retention.ms",
            min=0,
            doc="A tombstone (null value) in a compacted log is kept this long after the "
            "cleaning that first saw it (its batch's delete horizon), so consumers reading "
            "from the start see it; later cleanings remove it.",
        ),
    )
    file_delete_delay_ms: int = field(
        default=60_000,
        metadata=prop(
            "log.segment.delete.delay.ms",
            topic="file.delete.delay.ms",
            min=0,
            doc="A deleted segment is renamed to .deleted at once and unlinked after this delay, "
            "so reads already handed out (sendfile in flight) finish.",
        ),
    )
    log_dirs: tuple[str, ...] = field(
        default=("/tmp/kraftlog-logs",),
        metadata=prop(
            "log.dirs",
            doc="Comma-separated directories that hold partition directories.",
        ),
    )
    retention_check_interval_ms: int = field(
        default=300_000,
        metadata=prop(
            "log.retention.check.interval.ms",
            min=1,
            doc="How often the log manager applies time, size and log-start-offset "
            "retention to every log.",
        ),
    )
    log_cleaner_enable: bool = field(
        default=True,
        metadata=prop(
            "log.cleaner.enable",
            doc="Run the log cleaner threads (needed by compacted topics, __consumer_offsets "
            "among them).",
        ),
    )
    log_cleaner_threads: int = field(
        default=1,
        metadata=prop(
            "log.cleaner.threads",
            min=0,
            max=64,
            doc="Log cleaner threads; each cleans one log at a time.",
        ),
    )
    log_cleaner_backoff_ms: int = field(
        default=15_000,
        metadata=prop(
            "log.cleaner.backoff.ms",
            min=0,
            doc="How long a cleaner thread sleeps when no log needs cleaning.",
        ),
    )
    log_cleaner_dedupe_buffer_size: int = field(
        default=128 * MIB,
        metadata=prop(
            "log.cleaner.dedupe.buffer.size",
            min=64 * 1024,
            doc="Memory for the key -> offset maps of all cleaner threads together; a "
            "cleaning covers as many dirty segments as its map can hold.",
        ),
    )
    log_cleaner_io_buffer_load_factor: float = field(
        default=0.9,
        metadata=prop(
            "log.cleaner.io.buffer.load.factor",
            min=0.1,
            max=1.0,
            doc="Share of an offset map's slots a cleaning may fill.",
        ),
    )
    log_cleaner_io_max_bytes_per_second: float = field(
        default=float("inf"),
        metadata=prop(
            "log.cleaner.io.max.bytes.per.second",
            min=1.0,
            doc="Throttle on the cleaner threads' reads plus writes (bytes per second, "
            "all threads together).",
        ),
    )

    @property
    def log_append_time(self) -> bool:
        return self.message_timestamp_type == LOG_APPEND_TIME

    def __post_init__(self) -> None:
        # cleanup.policy is a list (Kafka's type LIST): checked here rather than with
        # ``choices`` so the field stays a plain string ("compact,delete" as written).
        policies = cleanup_policies(self.cleanup_policy)
        if not policies or any(p not in (DELETE, COMPACT) for p in policies):
            raise ConfigError(
                f"cleanup.policy: {self.cleanup_policy!r} is not a list of {DELETE}, {COMPACT}"
            )

    @property
    def deletes_by_retention(self) -> bool:
        """Time and size retention apply (``delete`` is among the policies)."""
        return DELETE in cleanup_policies(self.cleanup_policy)

    @property
    def compact(self) -> bool:
        """The log cleaner compacts this log (``compact`` is among the policies)."""
        return COMPACT in cleanup_policies(self.cleanup_policy)


def cleanup_policies(value: str) -> tuple[str, ...]:
    """``"compact, delete"`` -> ``("compact", "delete")``."""
    return tuple(p.strip() for p in value.split(",") if p.strip())
