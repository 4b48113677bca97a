"""PartitionMetadataFile: ``partition.metadata`` in a partition directory, naming the topic id
the log belongs to (Kafka's PartitionMetadataFile, KIP-516).

File ``<log.dir>/<topic>-<partition>/partition.metadata``, UTF-8 text, exactly Kafka's::

    version: 0
    topic_id: <topic id as 22 characters of URL-safe base64 without padding>

Why: a topic deleted and re-created under the same name while a broker was down leaves that
broker a directory ``<topic>-<partition>`` of the *old* topic. The metadata names the new
topic id; the stored one differs, so the log manager deletes the stale log instead of serving
the old topic's records as the new one's.

Durability: written in place when there is no file yet (a torn file does not parse and
counts as missing), else atomically (``.tmp``, rename); but, as Kafka does since it moved the write
off the request path, not fsynced when recorded: :meth:`flush` (run by the log manager's
maintenance, a bounded number per round) makes it durable; close leaves the rest to the
kernel's writeback. A crash before that
leaves no file; the next ``get_or_create_log`` with a topic id records it again (a file that
is missing is adopted, only a file that disagrees deletes the log).

Thread-safety: one instance per log, driven under the log manager's lock.
"""

from __future__ import annotations

import base64
import os
import uuid

from common.durable_io import fsync_file
from data_plane.storage.errors import CorruptCheckpointError

PARTITION_METADATA_FILE = "partition.metadata"
TMP_SUFFIX = ".tmp"
PARTITION_METADATA_VERSION = 0


def topic_id_to_string(topic_id: uuid.UUID) -> str:
    """Kafka's Uuid.toString: URL-safe base64 of the 16 bytes, without padding."""
    return base64.urlsafe_b64encode(topic_id.bytes).decode("ascii").rstrip("=")


def topic_id_from_string(text: str) -> uuid.UUID:
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (ValueError, TypeError):
        raise ValueError(f"{text!r} is not a base64 topic id") from None
    if len(raw) != 16:
        raise ValueError(f"{text!r} is not a 16-byte topic id")
    return uuid.UUID(bytes=raw)


class PartitionMetadataFile:
    def __init__(self, dir_path: str) -> None:
        self.path = os.path.join(dir_path, PARTITION_METADATA_FILE)
        self._dirty = False

    def exists(self) -> bool:
        return os.path.exists(self.path)

    def read(self) -> uuid.UUID | None:
        """The stored topic id, None if there is no file; :class:`CorruptCheckpointError`
        if it does not parse."""
        try:
            with open(self.path, encoding="utf-8") as f:
                text = f.read()
        except FileNotFoundError:
            return None
        except UnicodeDecodeError:
            raise CorruptCheckpointError(f"{self.path}: not UTF-8 text") from None
        fields: dict[str, str] = {}
        for n, line in enumerate(text.splitlines(), start=1):
            key, sep, value = line.partition(":")
            if not sep:
                raise CorruptCheckpointError(f"{self.path}:{n}: expected 'key: value'")
            fields[key.strip()] = value.strip()
        if fields.get("version") != str(PARTITION_METADATA_VERSION):
            raise CorruptCheckpointError(f"{self.path}: unknown version {fields.get('version')!r}")
        try:
            return topic_id_from_string(fields.get("topic_id", ""))
        except ValueError as e:
            raise CorruptCheckpointError(f"{self.path}: {e}") from None

    def record(self, topic_id: uuid.UUID) -> None:
        """Write the file (atomically, not fsynced: see :meth:`flush`)."""
        tmp = self.path + TMP_SUFFIX
        body = (
            f"version: {PARTITION_METADATA_VERSION}\ntopic_id: {topic_id_to_string(topic_id)}\n"
        ).encode()
        try:
            # A new log has no file yet: write it in place (a crash that tears it leaves a
            # file that does not parse, which counts as missing), saving the rename that
            # dominates creating thousands of partitions on ext4.
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                os.write(fd, body)
            finally:
                os.close(fd)
            os.replace(tmp, self.path)
        else:
            try:
                os.write(fd, body)
            finally:
                os.close(fd)
        self._dirty = True

    @property
    def dirty(self) -> bool:
        return self._dirty

    def flush(self) -> None:
        """fsync the file written by :meth:`record` (the directory entry is made durable by
        the log's directory fsync); no-op when nothing is pending."""
        if not self._dirty:
            return
        fsync_file(self.path)
        self._dirty = False
