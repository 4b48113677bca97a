"""Folding metadata-log entries into snapshots, and reading entries back into images.

:func:`build_snapshot` is the ``raft.api.SnapshotBuilder`` that metadata/ hands to
``raft.metadata_log.MetadataLog``: previous snapshot (an encoded :class:`MetadataImage`) plus
the folded entries -> the encoded image after them. It is pure and deterministic (every voter
folds the same entries into the same bytes) and never raises.

Thread-safety: stateless functions.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence

from metadata import features
from metadata.delta import MetadataDelta
from metadata.image import MetadataImage, SnapshotDecodeError
from metadata.records import MetadataRecord, RecordDecodeError, UnknownRecordError, decode_record
from raft.api import LogEntry, Snapshot

logger = logging.getLogger(__name__)


def decode_entry(entry: LogEntry) -> MetadataRecord | None:
    """The metadata record in ``entry``; None for raft control entries and for records this
    node cannot read (unknown type/version: refused with an error that names the supported
    metadata.version range, since the finalized level keeps such records away from nodes that
    support it; malformed: skipped with an error, identically on every node)."""
    if entry.is_control:
        return None
    try:
        return decode_record(entry.record)
    except UnknownRecordError as exc:
        logger.error(
            "offset %d: %s: written at a metadata.version this node cannot read (it supports "
            "%s); refused, the node's metadata stays without it: upgrade this node's software",
            entry.offset,
            exc,
            features.SUPPORTED,
        )
    except RecordDecodeError as exc:
        logger.error("offset %d: malformed metadata record (%s); skipped", entry.offset, exc)
    return None


def replay_entries(delta: MetadataDelta, entries: Iterable[LogEntry]) -> None:
    """Replay every metadata record of ``entries`` into ``delta`` and advance its offset over
    control entries too (the image offset is the last log offset applied, of any kind)."""
    for entry in entries:
        record = decode_entry(entry)
        if record is not None:
            delta.replay(record, entry.offset)
        elif entry.offset > delta.offset:
            delta.offset = entry.offset


def image_from_snapshot(snapshot: Snapshot | None) -> MetadataImage:
    """Decode a raft snapshot. An undecodable snapshot is a bug or corruption; an empty image is
    returned (logged as an error) so readers keep running, identically on every node."""
    if snapshot is None:
        return MetadataImage()
    try:
        image = MetadataImage.decode(snapshot.data)
    except SnapshotDecodeError as exc:
        logger.error("metadata snapshot at offset %d unreadable: %s", snapshot.last_offset, exc)
        return MetadataImage(offset=snapshot.last_offset)
    if image.offset != snapshot.last_offset:
        logger.error(
            "metadata snapshot claims offset %d but raft says %d",
            image.offset,
            snapshot.last_offset,
        )
    return image


def build_snapshot(previous: Snapshot | None, entries: Sequence[LogEntry]) -> bytes:
    """``raft.api.SnapshotBuilder``: the encoded image after ``previous`` and ``entries``."""
    delta = MetadataDelta(image_from_snapshot(previous))
    replay_entries(delta, entries)
    return delta.apply().encode()
