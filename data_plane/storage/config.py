"""LogConfig: the storage settings of one partition's log, under Kafka's property names.

Broker-level keys (``log.segment.bytes``) set the defaults in ``server.properties``; the
per-topic keys (``segment.bytes``) override them for one topic (see
:func:`data_plane.configdef.with_overrides` with ``topic=True``). Immutable, thread-safe.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from data_plane.configdef import prop

LONG_MAX = (1 << 63) - 1
INT_MAX = (1 << 31) - 1
MIB = 1024 * 1024
DAY_MS = 24 * 60 * 60 * 1000

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
        default="delete",
        metadata=prop(
            "log.cleanup.policy",
            topic="cleanup.policy",
            choices=("delete", "compact"),
            doc="delete: time/size retention removes old segments. compact is accepted for "
            "compatibility but retention is then skipped (no log cleaner yet).",
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

    @property
    def log_append_time(self) -> bool:
        return self.message_timestamp_type == LOG_APPEND_TIME

    @property
    def deletes_by_retention(self) -> bool:
        return self.cleanup_policy == "delete"
