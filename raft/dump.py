"""The state dump file (pysyncobj's "full dump"), written by kraftlog instead of pysyncobj.

pysyncobj compacts its journal by dumping the whole replicated object (by default a gzipped
pickle of its ``__dict__``) and then dropping the journal entries the dump covers. kraftlog
passes its own ``serializer``/``deserializer`` so the dump holds exactly the bounded
:class:`~raft.state.MetadataLogState` (snapshot + tail) and pysyncobj's two boundary entries,
in a checked format, written durably.

Layout of ``raft-dump.bin``::

    magic b"KLRAFTD1" | payload length u64 LE | crc32c(payload) u32 LE | payload
    payload = msgpack map {"state": MetadataLogState.to_dict(),
                           "last": [command, index, term], "prev": [command, index, term],
                           "cluster": [voter address, ...],
                           "voters": [[voter id, voter address], ...]}

``voters`` is the voter set as of the dump's last entry (see raft.membership); ``cluster`` is
the same addresses, as pysyncobj expects them. A dump without ``voters`` predates dynamic
membership: its voters are those of ``controller.quorum.voters``.

pysyncobj writes the dump to ``<file>.tmp`` through :func:`write_dump` (which fsyncs it) and
renames it over the old one itself; the journal syncs the directory before dropping entries
(see :meth:`raft.journal.DurableJournal.deleteEntriesTo`). The same file is what a leader
streams to a follower that is too far behind; :func:`read_dump` rejects a damaged one.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from typing import Any

import crc32c
import msgpack

from common.durable_io import fsync_directory
from raft.journal import Entry

DUMP_MAGIC = b"KLRAFTD1"
_HEADER = struct.Struct("<QI")
# The dump holds at most metadata.log.max.tail.records records plus one snapshot.
MAX_DUMP_BYTES = 1024 * 1024 * 1024


class DumpCorruptError(Exception):
    """The dump file is truncated, fails its checksum or has an unexpected layout."""


@dataclass(frozen=True, slots=True)
class DumpContents:
    state: dict[str, Any]
    last_entry: Entry
    prev_entry: Entry
    cluster: list[str]
    voters: dict[int, str] | None = None


def _entry(value: Any) -> Entry:
    command, idx, term = value
    if not isinstance(command, bytes) or not isinstance(idx, int) or not isinstance(term, int):
        raise DumpCorruptError("dump: malformed boundary entry")
    return (command, idx, term)


def _voters(value: Any) -> dict[int, str] | None:
    if value is None:
        return None
    voters = {}
    for item in value:
        node_id, address = item
        if type(node_id) is not int or not isinstance(address, str):
            raise DumpCorruptError("dump: malformed voter")
        voters[node_id] = address
    return voters


def write_dump(path: str, contents: DumpContents) -> None:
    payload = msgpack.packb(
        {
            "state": contents.state,
            "last": list(contents.last_entry),
            "prev": list(contents.prev_entry),
            "cluster": contents.cluster,
            "voters": None
            if contents.voters is None
            else [[i, a] for i, a in sorted(contents.voters.items())],
        },
        use_bin_type=True,
    )
    header = DUMP_MAGIC + _HEADER.pack(len(payload), crc32c.crc32c(payload))
    with open(path, "wb") as f:
        f.write(header)
        f.write(payload)
        f.flush()
        os.fsync(f.fileno())


def read_dump(path: str, *, make_durable: bool = False) -> DumpContents:
    """Read and check a dump. ``make_durable`` fsyncs it and its directory first (for a dump
    received from the leader, which pysyncobj wrote without syncing)."""
    with open(path, "rb") as f:
        if make_durable:
            os.fsync(f.fileno())
        head = f.read(len(DUMP_MAGIC) + _HEADER.size)
        if len(head) < len(DUMP_MAGIC) + _HEADER.size or not head.startswith(DUMP_MAGIC):
            raise DumpCorruptError(f"{path}: not a kraftlog raft dump")
        length, crc = _HEADER.unpack_from(head, len(DUMP_MAGIC))
        if length > MAX_DUMP_BYTES:
            raise DumpCorruptError(f"{path}: payload length {length} is implausible")
        payload = f.read(length)
    if make_durable:
        fsync_directory(os.path.dirname(os.path.abspath(path)))
    if len(payload) != length or crc32c.crc32c(payload) != crc:
        raise DumpCorruptError(f"{path}: truncated or checksum mismatch")
    try:
        data = msgpack.unpackb(payload, raw=False)
        return DumpContents(
            state=data["state"],
            last_entry=_entry(data["last"]),
            prev_entry=_entry(data["prev"]),
            cluster=[str(a) for a in data["cluster"]],
            voters=_voters(data.get("voters")),
        )
    except (KeyError, TypeError, ValueError, msgpack.UnpackException) as e:
        raise DumpCorruptError(f"{path}: malformed payload: {e}") from None
