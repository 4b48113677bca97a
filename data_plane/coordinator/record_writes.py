"""The ``__consumer_offsets`` writes a group coordinator has asked for and not yet heard back
about.

A part of the coordinator calls :meth:`RecordWrites.write` with the records and a callback;
the write leaves as a :class:`RecordWrite` in the call's :class:`CoordinatorOutputs`, the I/O
layer appends it (acks=all) and reports the outcome to the coordinator's ``complete_write``,
which hands it to :meth:`RecordWrites.complete`: the callback then runs once with the error
code (NO_ERROR only when the partition is still owned and loaded) and an outputs object to
answer into. Write ids are unique for the life of the object.

Thread-safety: none; the coordinator's owner (the broker event loop) serialises access.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable

from common.error_codes import ErrorCode
from data_plane.coordinator.messages import CoordinatorOutputs, RecordWrite

logger = logging.getLogger(__name__)

# (key, value) pairs of one write; a None value is a tombstone.
Records = list[tuple[bytes, bytes | None]]
WriteDone = Callable[[int, CoordinatorOutputs], None]


class RecordWrites:
    def __init__(self) -> None:
        self._pending: dict[int, tuple[int, WriteDone]] = {}
        self._ids = itertools.count(1)

    def write(
        self,
        out: CoordinatorOutputs,
        partition: int,
        records: Records,
        on_done: WriteDone,
        *,
        producer_id: int = -1,
        producer_epoch: int = -1,
    ) -> None:
        """Ask for ``records`` to be appended to ``partition`` (a transactional batch when
        ``producer_id`` is set); ``on_done`` hears the outcome."""
        write_id = next(self._ids)
        self._pending[write_id] = (partition, on_done)
        out.writes.append(
            RecordWrite(write_id, partition, tuple(records), producer_id, producer_epoch)
        )

    def complete(
        self, write_id: int, error_code: int, is_loaded: Callable[[int], bool]
    ) -> CoordinatorOutputs:
        """The outcome of write ``write_id``; a success in a partition that is no longer
        loaded (unloaded or reloading meanwhile) counts as NOT_LEADER_OR_FOLLOWER."""
        out = CoordinatorOutputs()
        entry = self._pending.pop(write_id, None)
        if entry is None:
            return out
        partition, on_done = entry
        if error_code == ErrorCode.NO_ERROR and not is_loaded(partition):
            error_code = ErrorCode.NOT_LEADER_OR_FOLLOWER
        on_done(error_code, out)
        return out


def ignore_write(error: int, _out: CoordinatorOutputs) -> None:
    """The callback of a write nobody waits for: a failure is only logged."""
    if error != ErrorCode.NO_ERROR:
        logger.warning("a group metadata write failed with error %d", error)
