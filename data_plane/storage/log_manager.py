"""LogManager: every partition log of a broker across its ``log.dirs``.

Each log directory holds the files log_dir_layout.py lists: the lock, the clean-shutdown
marker, the offset checkpoints (log_dir_checkpoints.py) and one directory per partition log;
any other name stops the start naming it (pass ``extra_allowed_names`` for files another
subsystem keeps there). A new log goes to the online log directory with the most free space,
the fewest logs among about equally free ones (log_dir_placement.py).

Directory failures (JBOD): an I/O error met in a log directory (by a log's method, a
checkpoint write or maintenance) takes the directory offline (log_dir_failure.py). The
failure-handler thread started by :meth:`start` (or :meth:`handle_pending_failures`) then
closes its logs without writing, drops them from the table (their partitions are *offline*:
``get_or_create_log`` refuses them with KAFKA_STORAGE_ERROR rather than creating them in
another directory), and tells the listeners added with :meth:`add_offline_listener` (the
broker, which stops serving them and reports them to the controller). Checkpoints, retention
and the clean-shutdown marker skip offline directories; the other directories keep serving.

Descriptors: each log keeps at most its active segment's ``.log`` open; closed segments of
all logs share one :class:`OpenSegmentCache` bounded by ``max_open_segments``.

Startup: each directory is locked, ``-delete`` leftovers are removed, every partition
directory is loaded with the recovery point, log start offset and high watermark from the
checkpoints; after an unclean shutdown (no marker) logs recover from their recovery point.

Threads: none is started by the constructor. The broker calls :meth:`maintenance` on a timer
(or :meth:`start` runs it on one background thread): it flushes per policy, applies retention
(every ``log.retention.check.interval.ms``), unlinks ``.deleted`` files and writes
checkpoints. :meth:`start` also starts the :class:`LogCleaner` threads (``cleaner``), which
compact logs whose ``cleanup.policy`` includes ``compact`` (see cleaner.py); a deleted log's
cleaning is aborted first, and ``cleaner-offset-checkpoint`` forgets it.
Thread-safety: all public methods may be called from any thread; the log table is changed
under a lock (``get_log`` reads it without: a dict lookup is atomic), each Log guards itself.
Maintenance never works on a partition being deleted: a deletion renames the partition's
directory under the directory lock, which maintenance also holds while it fsyncs a partition's
files and directory, after checking that the log is still the registered one; a log closed
by a deletion in the middle of its flush or retention pass is skipped without an error.
"""

from __future__ import annotations

import logging
import os
import threading
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from common.durable_io import fsync_directory
from common.errors import ApiError
from common.log_config import LogConfig
from common.topic_partition import TopicPartition
from data_plane.storage.checkpoints import (
    HIGH_WATERMARK_CHECKPOINT,
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
)
from data_plane.storage.compaction.log_cleaner import LogCleaner
from data_plane.storage.errors import (
    CorruptCheckpointError,
    KafkaStorageError,
    LogClosedError,
    LogDirLayoutError,
)
from data_plane.storage.log import Clock, Log, wall_clock_ms
from data_plane.storage.log_dir_checkpoints import LogDirCheckpoints
from data_plane.storage.log_dir_failure import LogDirFailureChannel
from data_plane.storage.log_dir_layout import (
    CLEAN_SHUTDOWN_FILE,
    KNOWN_TOP_LEVEL_FILES,
    lock_log_dir,
    scan_partition_dirs,
)
from data_plane.storage.log_dir_placement import choose_log_dir, disk_space
from data_plane.storage.log_loader import partition_dir_name
from data_plane.storage.partition_metadata import PartitionMetadataFile
from data_plane.storage.segment_cache import DEFAULT_MAX_OPEN_SEGMENTS, OpenSegmentCache

logger = logging.getLogger(__name__)

# partition.metadata files fsynced per maintenance round (two fsyncs each): creating 10,000
# partitions spreads their syncing over rounds instead of stalling retention and flushes.
MAX_PARTITION_METADATA_FLUSHES_PER_ROUND = 200
# Default pause between two maintenance rounds when run by start() (flushes, checkpoints and
# unlinking .deleted files; retention runs every log.retention.check.interval.ms).
DEFAULT_MAINTENANCE_INTERVAL_MS = 1000


# How long the failure-handler thread waits for a failed directory before checking for close.
FAILURE_POLL_S = 1.0

# Told (log directory, partitions whose logs it held) when a directory went offline.
OfflineListener = Callable[[str, list[TopicPartition]], None]


@dataclass(frozen=True, slots=True)
class LogDescription:
    topic: str
    partition: int
    size_bytes: int
    offset_lag: int  # how far the log end is behind the high watermark (0 when at it)


@dataclass(frozen=True, slots=True)
class LogDirDescription:
    path: str
    offline_reason: str | None  # None: online
    total_bytes: int  # -1 when offline or unknown
    usable_bytes: int
    logs: list[LogDescription]


@dataclass(frozen=True, slots=True)
class MaintenanceReport:
    flushed_logs: int
    deleted_segments: int
    unlinked_segments: int
    errors: tuple[str, ...]


class LogManager:
    def __init__(
        self,
        config: LogConfig,
        *,
        topic_config: Callable[[str], LogConfig] | None = None,
        extra_allowed_names: Iterable[str] = (),
        clock_ms: Clock = wall_clock_ms,
        max_open_segments: int = DEFAULT_MAX_OPEN_SEGMENTS,
    ) -> None:
        """Lock and load every log directory in ``config.log_dirs``. ``topic_config(topic)``
        gives a topic's LogConfig (default: ``config``). ``max_open_segments`` bounds the
        closed segments (not the active ones) holding a descriptor at once, over all logs."""
        if not config.log_dirs:
            raise LogDirLayoutError("log.dirs is empty")
        self._default_config = config
        self._topic_config = topic_config or (lambda _topic: config)
        self._allowed = KNOWN_TOP_LEVEL_FILES | set(extra_allowed_names)
        self._clock_ms = clock_ms
        self._lock = threading.RLock()
        # Held while a partition directory is renamed for deletion, and while maintenance
        # fsyncs files in one (always taken before ``_lock``, never inside it).
        self._directory_lock = threading.Lock()
        self._logs: dict[TopicPartition, Log] = {}
        self._dir_of: dict[TopicPartition, str] = {}
        self._logs_per_dir: dict[str, int] = {}
        # Topic ids read from or written to partition.metadata (read lazily, on the first
        # get_or_create_log that names a topic id).
        self._topic_ids: dict[TopicPartition, uuid.UUID] = {}
        self._metadata_files: dict[TopicPartition, PartitionMetadataFile] = {}
        self.segment_cache = OpenSegmentCache(max_open_segments)
        self._lock_fds: dict[str, int] = {}
        self._closed = False
        self.failures = LogDirFailureChannel()
        # Its writes serialise on its own lock, taken after ``_directory_lock`` and before
        # ``_lock`` (which ``_dir_of_copy`` takes).
        self._checkpoints = LogDirCheckpoints(self.failures, self.online_dirs, self._dir_of_copy)
        # Partitions whose log was in a directory that went offline: (directory, topic id).
        self._offline: dict[TopicPartition, tuple[str, uuid.UUID | None]] = {}
        self._offline_listeners: list[OfflineListener] = []
        self._failure_thread: threading.Thread | None = None
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self.log_dirs = tuple(os.path.abspath(d) for d in config.log_dirs)
        self._logs_per_dir = {d: 0 for d in self.log_dirs}
        self._retention_check_interval_ms = config.retention_check_interval_ms
        self._next_retention_check_ms: int | None = None
        # Whether every log directory carried the clean-shutdown marker at startup: then every
        # log holds all it ever acknowledged (flushed on close). The broker tells the controller
        # at registration (unclean recovery, metadata.election).
        self.found_clean_shutdown = True
        try:
            for log_dir in self.log_dirs:
                try:
                    self._lock_fds[log_dir] = lock_log_dir(log_dir)
                except LogDirLayoutError:
                    raise  # locked by another process: never start beside it
                except OSError as e:
                    self.failures.maybe_add_offline(log_dir, f"locking: {e}")
            for log_dir in self.online_dirs():
                try:
                    self._load_dir(log_dir)
                except OSError as e:
                    # A failed disk: start with the other directories, as Kafka does.
                    self.failures.maybe_add_offline(log_dir, f"loading: {e}")
            if self.failures.offline_dirs():
                # Its logs are missing here: their replicas must catch up, not lead.
                self.found_clean_shutdown = False
            if not self.online_dirs():
                raise KafkaStorageError(
                    f"every log directory failed to load: {self.failures.offline_dirs()}"
                )
        except BaseException:
            self._abort_startup()
            raise
        self.cleaner = LogCleaner(
            config, self._logs_with_dirs, self.online_dirs(), clock_ms=self._clock_ms
        )
        for tp, log in self._logs.items():
            self._watch_truncations(tp, log, self._dir_of[tp])
        # Logs loaded from a directory before it failed to load are dropped now.
        self.handle_pending_failures()

    def _watch_truncations(self, tp: TopicPartition, log: Log, log_dir: str) -> None:
        manager = self.cleaner.manager
        log.truncation_listener = lambda offset: manager.truncate_checkpoint(tp, log_dir, offset)

    def _logs_with_dirs(self) -> list[tuple[TopicPartition, Log, str]]:
        with self._lock:
            return [(tp, log, self._dir_of[tp]) for tp, log in self._logs.items()]

    # -- startup -----------------------------------------------------------------------------

    def _load_dir(self, log_dir: str) -> None:
        clean_marker = os.path.join(log_dir, CLEAN_SHUTDOWN_FILE)
        clean = os.path.exists(clean_marker)
        self.found_clean_shutdown = self.found_clean_shutdown and clean
        read = self._checkpoints.read
        recovery_points = read(log_dir, RECOVERY_POINT_CHECKPOINT)
        start_offsets = read(log_dir, LOG_START_OFFSET_CHECKPOINT)
        high_watermarks = read(log_dir, HIGH_WATERMARK_CHECKPOINT)
        partition_dirs = scan_partition_dirs(log_dir, self._allowed)
        for tp, path in partition_dirs:
            if tp in self._logs:
                raise LogDirLayoutError(
                    f"partition {tp[0]}-{tp[1]} exists in two log directories: "
                    f"{self._logs[tp].dir_path} and {path}"
                )
            log = Log(
                path,
                self._topic_config(tp[0]),
                topic=tp[0],
                partition=tp[1],
                recovery_point=recovery_points.get(tp, 0),
                log_start_offset=start_offsets.get(tp, 0),
                high_watermark=high_watermarks.get(tp, 0),
                clean_shutdown=clean and tp in recovery_points,
                clock_ms=self._clock_ms,
                segment_cache=self.segment_cache,
            )
            self._add_locked(tp, log, log_dir)
        if clean:
            # From now on the directory is in use: a crash must not look clean.
            os.unlink(clean_marker)

    def _abort_startup(self) -> None:
        for log in self._logs.values():
            try:
                log.close()
            except (OSError, ApiError):
                logger.exception("closing %s after a failed start", log.name)
        self._logs.clear()
        self._release_locks()

    def _release_locks(self) -> None:
        for fd in self._lock_fds.values():
            os.close(fd)
        self._lock_fds.clear()

    # -- logs --------------------------------------------------------------------------------

    def get_log(self, topic: str, partition: int) -> Log | None:
        # No lock: a dict lookup is atomic, and writers replace entries under the lock. The
        # broker's event loop calls this on its request path while another thread may be
        # creating thousands of logs; taking the lock would make it wait on file creation.
        return self._logs.get(TopicPartition(topic, partition))

    def all_logs(self) -> list[Log]:
        with self._lock:
            return list(self._logs.values())

    def _add_locked(self, tp: TopicPartition, log: Log, log_dir: str) -> None:
        self._logs[tp] = log
        self._dir_of[tp] = log_dir
        self._logs_per_dir[log_dir] += 1
        failures = self.failures
        log.io_error_listener = lambda reason: failures.maybe_add_offline(log_dir, reason)

    def _remove_locked(self, tp: TopicPartition) -> tuple[Log | None, str | None]:
        log = self._logs.pop(tp, None)
        log_dir = self._dir_of.pop(tp, None)
        if log_dir is not None:
            self._logs_per_dir[log_dir] -= 1
        self._topic_ids.pop(tp, None)
        self._metadata_files.pop(tp, None)
        return log, log_dir

    def get_or_create_log(
        self,
        topic: str,
        partition: int,
        config: LogConfig | None = None,
        topic_id: uuid.UUID | None = None,
    ) -> Log:
        """The log of ``topic``-``partition``, created (in the online log dir chosen by
        log_dir_placement) if missing; KafkaStorageError for a partition whose directory went
        offline. ``config`` (the topic's config) is applied to an existing log too.

        ``topic_id`` (from the metadata) is recorded in the log's ``partition.metadata``. An
        existing log whose stored topic id differs belongs to a deleted topic of the same
        name (deleted and re-created while this broker was down): it is deleted (renamed
        ``-delete``) and a new, empty log created, with a warning. A log without a stored id
        adopts the given one.

        Creation does no fsync: the partition directory is made durable with the log's
        first flush of data and the log dir's entry for it with the next checkpoint write
        (maintenance), as Kafka does not sync on creation either. An empty log lost in a
        crash before that is simply created again from the metadata, which is the source of
        truth for which partitions exist; a log holding data is flushed (directory
        included) before its recovery point moves past that data."""
        tp = TopicPartition(topic, partition)
        with self._lock:
            if self._closed:
                raise LogClosedError("log manager is closed")
            offline = self._offline.get(tp)
            if offline is not None:
                raise KafkaStorageError(
                    f"{topic}-{partition} is in the offline log directory {offline[0]}"
                )
            log = self._logs.get(tp)
            if log is not None and topic_id is not None:
                stored = self._stored_topic_id_locked(tp, log)
                if stored is not None and stored != topic_id:
                    logger.warning(
                        "log %s belongs to topic id %s, the metadata names %s (the topic was "
                        "deleted and re-created): deleting the stale log",
                        log.name,
                        stored,
                        topic_id,
                    )
                    self.delete_log(topic, partition)
                    log = None
                elif stored is None:
                    self._record_topic_id_locked(tp, log, topic_id)
            if log is not None:
                if config is not None and config != log.config:
                    log.update_config(config)
                return log
            online = self.online_dirs()
            if not online:
                raise KafkaStorageError("every log directory is offline")
            log_dir = choose_log_dir(online, self._logs_per_dir)
            path = os.path.join(log_dir, partition_dir_name(topic, partition))
            try:
                log = Log(
                    path,
                    config or self._topic_config(topic),
                    topic=topic,
                    partition=partition,
                    clock_ms=self._clock_ms,
                    segment_cache=self.segment_cache,
                )
            except OSError as e:
                self.failures.maybe_add_offline(log_dir, f"creating {path}: {e}")
                raise KafkaStorageError(f"creating the log {topic}-{partition}: {e}") from e
            self._add_locked(tp, log, log_dir)
            self._watch_truncations(tp, log, log_dir)
            if topic_id is not None:
                self._record_topic_id_locked(tp, log, topic_id)
            logger.debug("created log %s in %s", log.name, log_dir)
            return log

    def topic_id_of(self, topic: str, partition: int) -> uuid.UUID | None:
        """The topic id stored in the log's ``partition.metadata`` (None: no log, no file)."""
        tp = TopicPartition(topic, partition)
        with self._lock:
            log = self._logs.get(tp)
            return None if log is None else self._stored_topic_id_locked(tp, log)

    def _metadata_file_locked(self, tp: TopicPartition, log: Log) -> PartitionMetadataFile:
        f = self._metadata_files.get(tp)
        if f is None:
            f = self._metadata_files[tp] = PartitionMetadataFile(log.dir_path)
        return f

    def _stored_topic_id_locked(self, tp: TopicPartition, log: Log) -> uuid.UUID | None:
        tid = self._topic_ids.get(tp)
        if tid is not None:
            return tid
        try:
            tid = self._metadata_file_locked(tp, log).read()
        except CorruptCheckpointError as e:
            # Written without fsync (see PartitionMetadataFile): a crash may leave it empty.
            # Treated as missing, so the metadata's id is adopted.
            logger.warning("%s; treating the topic id of %s as unknown", e, log.name)
            tid = None
        if tid is not None:
            self._topic_ids[tp] = tid
        return tid

    def _record_topic_id_locked(self, tp: TopicPartition, log: Log, topic_id: uuid.UUID) -> None:
        self._metadata_file_locked(tp, log).record(topic_id)
        self._topic_ids[tp] = topic_id

    def delete_log(self, topic: str, partition: int, topic_id: uuid.UUID | None = None) -> bool:
        """Close the log, rename its directory to ``<topic>-<partition>.<uuid>-delete`` and
        remove it; return whether it existed (and was deleted). With ``topic_id``, a log
        whose ``partition.metadata`` names another topic id is kept (it belongs to the
        topic re-created under the same name). Checkpoints forget it at once."""
        tp = TopicPartition(topic, partition)
        with self._directory_lock:
            return self._delete_log(tp, topic_id)

    def _delete_log(self, tp: TopicPartition, topic_id: uuid.UUID | None) -> bool:
        topic, partition = tp
        with self._lock:
            existing = self._logs.get(tp)
            if existing is None:
                return False
            if topic_id is not None:
                stored = self._stored_topic_id_locked(tp, existing)
                if stored is not None and stored != topic_id:
                    logger.info(
                        "not deleting %s: it belongs to topic id %s, not %s",
                        existing.name,
                        stored,
                        topic_id,
                    )
                    return False
            log, log_dir = self._remove_locked(tp)
        if log is None or log_dir is None:
            return False
        # A cleaning of it in progress stops before its directory goes.
        self.cleaner.abort_cleaning(tp)
        self.cleaner.forget(tp, log_dir)
        renamed = os.path.join(
            log_dir, f"{partition_dir_name(topic, partition)}.{uuid.uuid4().hex}-delete"
        )
        log.close_and_delete_dir(renamed)
        self.checkpoint_recovery_points()
        self.checkpoint_log_start_offsets()
        hws = {k: v for k, v in self.read_high_watermarks().items() if k != tp}
        self._checkpoints.write(HIGH_WATERMARK_CHECKPOINT, hws, force=True)
        logger.info("deleted log %s", log.name)
        return True

    def flush_partition_metadata(self, max_files: int | None = None) -> int:
        """fsync the ``partition.metadata`` files recorded since the last call (and their
        directories), at most ``max_files`` of them; return how many. Run by maintenance,
        bounded per round."""
        with self._lock:
            pending = [
                (tp, f, self._logs[tp])
                for tp, f in self._metadata_files.items()
                if f.dirty and tp in self._logs
            ]
        if max_files is not None:
            pending = pending[:max_files]
        flushed = 0
        for tp, f, log in pending:
            with self._directory_lock:
                if self._logs.get(tp) is not log:
                    continue  # deleted (or replaced) since the list was made
                try:
                    f.flush()
                    fsync_directory(log.dir_path)
                except OSError as e:
                    self.failures.maybe_add_offline(os.path.dirname(log.dir_path), f"{f.path}: {e}")
                    continue
                flushed += 1
        return flushed

    # -- checkpoints -------------------------------------------------------------------------

    def checkpoint_recovery_points(self) -> None:
        self._checkpoints.write(
            RECOVERY_POINT_CHECKPOINT, {tp: log.recovery_point for tp, log in self._items()}
        )

    def checkpoint_log_start_offsets(self) -> None:
        self._checkpoints.write(
            LOG_START_OFFSET_CHECKPOINT, {tp: log.log_start_offset for tp, log in self._items()}
        )

    def checkpoint_high_watermarks(
        self, high_watermarks: Mapping[TopicPartition, int] | None = None
    ) -> None:
        """Write the high watermarks (default: each log's :attr:`Log.high_watermark`) to
        ``replication-offset-checkpoint`` in the log dir of each partition."""
        hws = (
            {tp: log.high_watermark for tp, log in self._items()}
            if high_watermarks is None
            else dict(high_watermarks)
        )
        self._checkpoints.write(HIGH_WATERMARK_CHECKPOINT, hws)

    def read_high_watermarks(self) -> dict[TopicPartition, int]:
        return self._checkpoints.read_online(HIGH_WATERMARK_CHECKPOINT)

    def _items(self) -> list[tuple[TopicPartition, Log]]:
        with self._lock:
            return list(self._logs.items())

    def _dir_of_copy(self) -> dict[TopicPartition, str]:
        with self._lock:
            return dict(self._dir_of)

    # -- maintenance -------------------------------------------------------------------------

    def maintenance(self, *, retention: bool | None = None) -> MaintenanceReport:
        """One round: flush logs per their policy, apply retention (when
        ``log.retention.check.interval.ms`` has passed since the last time, or as
        ``retention`` says), unlink due ``.deleted`` files, fsync new ``partition.metadata``
        files, checkpoint recovery points and log start offsets (the checkpoint write fsyncs
        the log dir, which makes the entries of partition directories created since
        durable). Never raises: a failing log is reported in ``errors`` and the round goes
        on."""
        flushed = deleted = unlinked = 0
        errors: list[str] = []
        if retention is None:
            now = self._clock_ms()
            due = self._next_retention_check_ms
            retention = due is None or now >= due
            if retention:
                self._next_retention_check_ms = now + self._retention_check_interval_ms
        for tp, log in self._items():
            try:
                if log.maybe_flush():
                    flushed += 1
                if retention:
                    deleted += log.delete_old_segments()
                unlinked += log.delete_pending_files()
            except (OSError, ApiError) as e:
                if self.get_log(*tp) is not log:
                    continue  # deleted meanwhile: nothing to maintain
                logger.exception("maintenance of %s failed", log.name)
                errors.append(f"{log.name}: {e}")
        try:
            self.flush_partition_metadata(MAX_PARTITION_METADATA_FLUSHES_PER_ROUND)
        except OSError as e:
            logger.exception("flushing partition.metadata files failed")
            errors.append(f"partition.metadata: {e}")
        try:
            self.checkpoint_recovery_points()
            self.checkpoint_log_start_offsets()
        except (OSError, ValueError) as e:
            logger.exception("writing checkpoints failed")
            errors.append(f"checkpoints: {e}")
        return MaintenanceReport(flushed, deleted, unlinked, tuple(errors))

    def start(
        self,
        interval_ms: int = DEFAULT_MAINTENANCE_INTERVAL_MS,
        *,
        retention_check_interval_ms: int | None = None,
    ) -> None:
        """Run :meth:`maintenance` every ``interval_ms`` on one daemon thread until close,
        applying retention every ``retention_check_interval_ms`` (default: the config's
        ``log.retention.check.interval.ms``), and start the log cleaner threads
        (``log.cleaner.enable``, ``log.cleaner.threads``)."""
        if retention_check_interval_ms is not None:
            if retention_check_interval_ms < 1:
                raise ValueError(
                    f"retention_check_interval_ms must be >= 1, got {retention_check_interval_ms}"
                )
            self._retention_check_interval_ms = retention_check_interval_ms
        self.cleaner.start()
        with self._lock:
            if self._thread is not None:
                return
            self._stop.clear()
            self._failure_thread = threading.Thread(
                target=self._handle_failures, name="log-dir-failure-handler", daemon=True
            )
            self._failure_thread.start()
            self._thread = threading.Thread(
                target=self._run,
                args=(interval_ms / 1000.0,),
                name="log-maintenance",
                daemon=True,
            )
            self._thread.start()

    def _run(self, interval_s: float) -> None:
        while not self._stop.wait(interval_s):
            self.maintenance()

    def stop(self, timeout_s: float = 30.0) -> None:
        """Stop the maintenance, failure-handler and log cleaner threads."""
        self.cleaner.stop()
        thread = self._thread
        if thread is not None:
            self._stop.set()
            self.failures.wake()
            thread.join(timeout_s)
            self._thread = None
        failure_thread = self._failure_thread
        if failure_thread is not None:
            failure_thread.join(timeout_s)
            self._failure_thread = None

    # -- directory failures ------------------------------------------------------------------

    def online_dirs(self) -> tuple[str, ...]:
        return tuple(d for d in self.log_dirs if not self.failures.is_offline(d))

    def offline_partitions(self) -> dict[TopicPartition, tuple[str, uuid.UUID | None]]:
        """Partitions whose log was in an offline directory: (directory, topic id)."""
        with self._lock:
            return dict(self._offline)

    def is_offline_partition(self, tp: TopicPartition) -> bool:
        """Whether ``tp``'s log was in a directory that went offline. No lock (a dict lookup
        is atomic): the broker asks on its request path."""
        return tp in self._offline

    def describe_dirs(
        self, wanted: Callable[[str, int], bool] | None = None
    ) -> list[LogDirDescription]:
        """Every log directory (online or not) with the size of each log in it that
        ``wanted(topic, partition)`` selects (all when None), for DescribeLogDirs."""
        with self._lock:
            logs = [(tp, log, self._dir_of[tp]) for tp, log in self._logs.items()]
        offline = self.failures.offline_dirs()
        by_dir: dict[str, list[LogDescription]] = {d: [] for d in self.log_dirs}
        for (topic, partition), log, log_dir in logs:
            if wanted is not None and not wanted(topic, partition):
                continue
            try:
                size = log.size_in_bytes
                lag = max(0, log.high_watermark - log.log_end_offset)
            except (OSError, ApiError):
                continue  # closed by a deletion meanwhile
            by_dir[log_dir].append(LogDescription(topic, partition, size, lag))
        out = []
        for log_dir in self.log_dirs:
            if log_dir in offline:
                out.append(LogDirDescription(log_dir, offline[log_dir], -1, -1, []))
            else:
                out.append(LogDirDescription(log_dir, None, *disk_space(log_dir), by_dir[log_dir]))
        return out

    def add_offline_listener(self, listener: OfflineListener) -> None:
        """``listener(log_dir, partitions)`` is called on the failure-handler thread each time
        a directory went offline, after its logs were closed."""
        self._offline_listeners.append(listener)

    def _handle_failures(self) -> None:
        while not self._stop.is_set():
            log_dir = self.failures.take(FAILURE_POLL_S)
            if log_dir is not None:
                self._take_dir_offline(log_dir)

    def handle_pending_failures(self) -> int:
        """Take every directory reported offline since the last call offline now (what the
        failure-handler thread does); return how many."""
        handled = 0
        while (log_dir := self.failures.take(0)) is not None:
            self._take_dir_offline(log_dir)
            handled += 1
        return handled

    def _take_dir_offline(self, log_dir: str) -> None:
        with self._directory_lock, self._lock:
            tps = [tp for tp, d in self._dir_of.items() if d == log_dir]
            logs = []
            for tp in tps:
                topic_id = self._topic_ids.get(tp)
                log, _ = self._remove_locked(tp)
                self._offline[tp] = (log_dir, topic_id)
                if log is not None:
                    logs.append(log)
        for tp in tps:
            self.cleaner.abort_cleaning(tp)
        for log in logs:
            log.close_after_dir_failure()
        logger.error(
            "log directory %s offline: %d partition logs closed (%s); the other directories "
            "keep serving",
            log_dir,
            len(tps),
            ", ".join(f"{t}-{p}" for t, p in tps[:20]) + (" ..." if len(tps) > 20 else ""),
        )
        for listener in self._offline_listeners:
            try:
                listener(log_dir, tps)
            except Exception:  # one listener's bug must not keep the others uninformed
                logger.exception("log directory failure listener failed")

    def close(self) -> None:
        """Stop maintenance, flush and close every log, write all checkpoints (recovery
        point = LEO) and the clean-shutdown marker, release the directory locks."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self.stop()
        logs = self._items()
        for tp, log in logs:
            try:
                log.close()
            except (OSError, ApiError) as e:
                # Its directory failed while closing: no marker there, the rest closes.
                log_dir = self._dir_of.get(tp)
                if log_dir is not None:
                    self.failures.maybe_add_offline(log_dir, f"closing {log.name}: {e}")
                log.close_after_dir_failure()
        # partition.metadata files maintenance has not fsynced yet are left to the kernel's
        # writeback: fsyncing thousands of them (two fsyncs each) made closing a broker that
        # had just created 10,000 partitions take a minute, and a file lost to a power cut
        # right after counts as missing, which only means the metadata's id is adopted.
        self.checkpoint_recovery_points()
        self.checkpoint_log_start_offsets()
        self.checkpoint_high_watermarks()
        # An offline directory gets no marker: its logs recover when it is loaded again.
        for log_dir in self.online_dirs():
            try:
                fd = os.open(os.path.join(log_dir, CLEAN_SHUTDOWN_FILE), os.O_WRONLY | os.O_CREAT)
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)
            except OSError as e:
                logger.error("log directory %s: no clean-shutdown marker: %s", log_dir, e)
        self._release_locks()
