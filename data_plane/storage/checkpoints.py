"""OffsetCheckpointFile: Kafka's text checkpoint of one offset per partition.

Files in each log directory (names as in Kafka)::

    recovery-point-offset-checkpoint   per partition: everything below is fsynced
    log-start-offset-checkpoint        per partition: the log start offset
    replication-offset-checkpoint      per partition: the high watermark

Format (UTF-8 text, '\\n' line ends)::

    0                        version
    2                        number of entries
    orders 0 1234            topic SP partition SP offset
    orders 1 99

Writes are atomic: the new content goes to ``<name>.tmp``, which is fsynced, renamed over the
file, and the directory fsynced, so a crash leaves the old or the new file, never a torn one.
A file that does not parse raises :class:`CorruptCheckpointError` naming the file and line.

Thread-safety: each instance serialises its own writes and reads with a lock; do not point two
instances at one path.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence

from common.durable_io import write_file_durably
from common.topic_partition import TopicPartition
from data_plane.storage.errors import CorruptCheckpointError

RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
HIGH_WATERMARK_CHECKPOINT = "replication-offset-checkpoint"
CHECKPOINT_VERSION = 0


def write_lines_durably(path: str, lines: Sequence[str]) -> None:
    """Replace ``path`` with ``lines`` (newline-terminated) so a crash leaves the old or the new
    content, never a torn file: write ``path.tmp``, fsync it, rename it over ``path``, fsync the
    directory. Not thread-safe for one path: callers hold their own lock."""
    write_file_durably(path, ("\n".join(lines) + "\n").encode("utf-8"))


class OffsetCheckpointFile:
    def __init__(self, path: str) -> None:
        self.path = path
        self._lock = threading.Lock()

    def write(self, offsets: Mapping[TopicPartition, int]) -> None:
        lines = [str(CHECKPOINT_VERSION), str(len(offsets))]
        for (topic, partition), offset in sorted(offsets.items()):
            if not topic or any(c.isspace() for c in topic):
                raise ValueError(f"topic name {topic!r} cannot be checkpointed")
            lines.append(f"{topic} {partition} {offset}")
        with self._lock:
            write_lines_durably(self.path, lines)

    def read(self) -> dict[TopicPartition, int]:
        """The checkpointed offsets; an empty dict if the file does not exist."""
        with self._lock:
            try:
                with open(self.path, encoding="utf-8") as f:
                    text = f.read()
            except FileNotFoundError:
                return {}
            except UnicodeDecodeError:
                raise CorruptCheckpointError(f"{self.path}: not UTF-8 text") from None
        return parse_checkpoint(text, self.path)


def parse_checkpoint(text: str, source: str) -> dict[TopicPartition, int]:
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()

    def fail(lineno: int, why: str) -> CorruptCheckpointError:
        return CorruptCheckpointError(f"{source}:{lineno}: {why}")

    if len(lines) < 2:
        raise fail(len(lines) + 1, "missing version or entry count line")
    if lines[0].strip() != str(CHECKPOINT_VERSION):
        raise fail(1, f"unsupported checkpoint version {lines[0]!r}")
    try:
        count = int(lines[1])
    except ValueError:
        raise fail(2, f"entry count {lines[1]!r} is not a number") from None
    if count != len(lines) - 2:
        raise fail(2, f"declares {count} entries but holds {len(lines) - 2}")
    out: dict[TopicPartition, int] = {}
    for lineno, line in enumerate(lines[2:], start=3):
        parts = line.split(" ")
        if len(parts) != 3:
            raise fail(lineno, f"expected 'topic partition offset', got {line!r}")
        topic, partition, offset = parts
        try:
            out[TopicPartition(topic, int(partition))] = int(offset)
        except ValueError:
            raise fail(lineno, f"partition or offset not a number in {line!r}") from None
    return out
