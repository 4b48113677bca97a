"""What a log directory may hold, and taking one for a broker (Kafka's LogManager.lockLogDirs
and the directory scan of its loadLogs).

Layout of each log directory::

    <log.dir>/
        .lock                                  flock()ed while a broker uses the directory
        .kafka_cleanshutdown                   present only after a clean close
        meta.properties                        written by `kraftlog storage format` (not read)
        raft-journal.log, raft-meta.json ...   the metadata log, when metadata.log.dir is here
        recovery-point-offset-checkpoint       see checkpoints.py
        log-start-offset-checkpoint
        replication-offset-checkpoint          high watermarks
        cleaner-offset-checkpoint              see compaction/log_cleaner_manager.py
        <topic>-<partition>/                   one Log (see log.py, log_loader.py), with its
                                               partition.metadata (partition_metadata.py)
        <topic>-<partition>.<uuid hex>-delete/ a deleted log being removed

Any other name raises :class:`LogDirLayoutError` naming it (the caller may allow names that
another subsystem keeps there), so a stray file is moved away by an operator rather than
silently ignored.

Thread-safety: pure functions over the file system; the log manager calls them while it
starts, before it is shared.
"""

from __future__ import annotations

import fcntl
import logging
import os
import re
import shutil
from collections.abc import Set

from common.durable_io import TMP_SUFFIX
from common.topic_partition import TopicPartition
from data_plane.storage.checkpoints import (
    HIGH_WATERMARK_CHECKPOINT,
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
)
from data_plane.storage.compaction.log_cleaner_manager import CLEANER_OFFSET_CHECKPOINT
from data_plane.storage.errors import LogDirLayoutError
from data_plane.storage.log_loader import parse_topic_partition

logger = logging.getLogger(__name__)

LOCK_FILE = ".lock"
CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
KNOWN_TOP_LEVEL_FILES = frozenset(
    {
        LOCK_FILE,
        CLEAN_SHUTDOWN_FILE,
        "meta.properties",
        CLEANER_OFFSET_CHECKPOINT,
        CLEANER_OFFSET_CHECKPOINT + TMP_SUFFIX,
        RECOVERY_POINT_CHECKPOINT,
        LOG_START_OFFSET_CHECKPOINT,
        HIGH_WATERMARK_CHECKPOINT,
        RECOVERY_POINT_CHECKPOINT + TMP_SUFFIX,
        LOG_START_OFFSET_CHECKPOINT + TMP_SUFFIX,
        HIGH_WATERMARK_CHECKPOINT + TMP_SUFFIX,
        # The metadata log's files (raft/syncobj_node.py LOG_DIR_FILES) when metadata.log.dir
        # is one of log.dirs, Kafka's default; deploy may pass that tuple as allowed names
        # too, so a renamed raft file needs no change here.
        "raft-journal.log",
        "raft-meta.json",
        "raft-dump.bin",
        "raft-journal.log.tmp",
        "raft-meta.json.tmp",
        "raft-dump.bin.tmp",
        "raft-dump.bin.1.tmp",
    }
)
DELETE_DIR = re.compile(r"^.+-\d+\.[0-9a-f]{32}-delete$")


def lock_log_dir(log_dir: str) -> int:
    """Create ``log_dir`` if missing and flock() its :data:`LOCK_FILE`; return the descriptor,
    which holds the lock until closed. :class:`LogDirLayoutError` when another process holds
    it; an OSError when the directory cannot be used."""
    os.makedirs(log_dir, exist_ok=True)
    fd = os.open(os.path.join(log_dir, LOCK_FILE), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise LogDirLayoutError(
            f"log directory {log_dir} is locked by another process ({LOCK_FILE})"
        ) from None
    return fd


def scan_partition_dirs(log_dir: str, allowed: Set[str]) -> list[tuple[TopicPartition, str]]:
    """The partition directories of ``log_dir`` (partition, path), in name order. Removes the
    ``-delete`` leftovers of deletions a crash interrupted; raises :class:`LogDirLayoutError`
    for a directory that is not a partition's or a file not in ``allowed``."""
    partition_dirs: list[tuple[TopicPartition, str]] = []
    for name in sorted(os.listdir(log_dir)):
        path = os.path.join(log_dir, name)
        if os.path.isdir(path):
            if DELETE_DIR.match(name):
                logger.info("removing deleted log directory %s", path)
                shutil.rmtree(path, ignore_errors=True)
                continue
            try:
                tp = parse_topic_partition(name)
            except LogDirLayoutError as e:
                raise LogDirLayoutError(f"{path}: {e}; move it out of log.dirs") from None
            partition_dirs.append((tp, path))
        elif name not in allowed:
            raise LogDirLayoutError(
                f"unexpected file {path} in log directory (not a checkpoint or partition "
                "directory); move it away and restart"
            )
    return partition_dirs
