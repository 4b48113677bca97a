"""LogDirCheckpoints: one kind of offset checkpoint (checkpoints.py) kept per log directory
for every partition log there (Kafka's LogManager.recoveryPointCheckpoints and
logStartOffsetCheckpoints, ReplicaManager.highWatermarkCheckpoints).

``<log.dir>/<file name>`` lists exactly the partitions whose log lives in that directory at
the time of the write. A directory's file is rewritten only when its entries differ from the
last ones this object wrote there (unless forced), and only while the directory is online; an
I/O error while writing takes that directory offline through the failure channel and the
other directories are still written.

Thread-safety: :meth:`write` calls run one at a time (they would share a file's ``.tmp``, and
one rename would find it gone); ``dir_of`` is called inside that serialisation, so a caller
lock it takes is always taken after this one. Reads need no lock.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping

from common.topic_partition import TopicPartition
from data_plane.storage.checkpoints import OffsetCheckpointFile
from data_plane.storage.log_dir_failure import LogDirFailureChannel


class LogDirCheckpoints:
    """Reads and writes the checkpoint files of a set of log directories. ``online_dirs()``
    names the directories to write (in ``log.dirs`` order); ``dir_of()`` returns a copy of
    the directory of each partition's log."""

    def __init__(
        self,
        failures: LogDirFailureChannel,
        online_dirs: Callable[[], tuple[str, ...]],
        dir_of: Callable[[], Mapping[TopicPartition, str]],
    ) -> None:
        self._failures = failures
        self._online_dirs = online_dirs
        self._dir_of = dir_of
        self._lock = threading.Lock()
        # What was last written to each (directory, file name): skips unchanged rewrites.
        self._last: dict[tuple[str, str], dict[TopicPartition, int]] = {}

    @staticmethod
    def read(log_dir: str, file_name: str) -> dict[TopicPartition, int]:
        """The entries of ``log_dir``'s ``file_name`` (empty if there is none); raises
        :class:`CorruptCheckpointError` for a file that does not parse."""
        return OffsetCheckpointFile(os.path.join(log_dir, file_name)).read()

    def read_online(self, file_name: str) -> dict[TopicPartition, int]:
        """The entries of ``file_name`` in every online directory."""
        out: dict[TopicPartition, int] = {}
        for log_dir in self._online_dirs():
            out.update(self.read(log_dir, file_name))
        return out

    def write(
        self, file_name: str, offsets: Mapping[TopicPartition, int], *, force: bool = False
    ) -> None:
        """Write ``file_name`` in each online directory with the entries of ``offsets`` whose
        partition's log is there (an empty file for a directory without any)."""
        with self._lock:
            dir_of = self._dir_of()
            by_dir: dict[str, dict[TopicPartition, int]] = {d: {} for d in self._online_dirs()}
            for tp, offset in offsets.items():
                log_dir = dir_of.get(tp)
                if log_dir in by_dir:
                    by_dir[log_dir][tp] = offset
            for log_dir, entries in by_dir.items():
                key = (log_dir, file_name)
                if not force and self._last.get(key) == entries:
                    continue
                try:
                    OffsetCheckpointFile(os.path.join(log_dir, file_name)).write(entries)
                except OSError as e:
                    # The other directories' checkpoints are still written.
                    self._failures.maybe_add_offline(log_dir, f"writing {file_name}: {e}")
                    continue
                self._last[key] = entries
