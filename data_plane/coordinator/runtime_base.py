"""CoordinatorRuntimeBase: what the group and transaction coordinators' runtimes share on a
broker — parking requests on the sans-IO machine's waiter tokens, appending the machine's
writes to its topic (acks=all through the broker's PartitionWriter, the outcome handed back
to the machine on the next loop turn), and following the
leadership of the coordinator's topic (``__consumer_offsets``, ``__transaction_state``):
when this broker becomes leader of one of its partitions (or the leader epoch changes) the
partition is read into the machine (COORDINATOR_LOAD_IN_PROGRESS meanwhile; a storage error
is retried after :data:`LOAD_RETRY_BACKOFF_S`, :data:`LOAD_MAX_ATTEMPTS` times); when it
stops leading it, the partition is unloaded.

Subclasses provide the machine-specific steps: :meth:`process` (apply an output),
:meth:`_complete_write`, :meth:`_begin_loading`, :meth:`_read_partition`,
:meth:`_complete_loading`, :meth:`_unload` and :meth:`_refresh_partition_count`.

Thread-safety: none; everything runs on the broker's event loop.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import logging
from collections.abc import Callable, Hashable, Iterable
from typing import Any, Generic, TypeVar

from common.error_codes import ErrorCode
from common.errors import ApiError
from common.topic_partition import TopicPartition
from data_plane.coordinator.messages import RecordWrite
from data_plane.coordinator.partition_writer import PartitionWriter
from data_plane.storage import Record, build_batch

logger = logging.getLogger(__name__)

# The outputs type of the subclass's sans-IO machine (what its steps return and process applies).
OutputsT = TypeVar("OutputsT")

# A failed load (a storage error while reading) is retried after this pause, this many times;
# the partition then stays "loading" (clients retry COORDINATOR_LOAD_IN_PROGRESS) and the
# error is logged.
LOAD_RETRY_BACKOFF_S = 0.5
LOAD_MAX_ATTEMPTS = 5


class CoordinatorRuntimeBase(Generic[OutputsT]):
    def __init__(
        self,
        writer: PartitionWriter,
        topic: str,
        *,
        write_timeout_ms: int,
        wall_clock: Callable[[], int],
    ) -> None:
        """``write_timeout_ms``: how long a write waits for its replication;
        ``wall_clock``: epoch ms for record timestamps."""
        self._writer = writer
        self._topic = topic
        self._write_timeout_ms = write_timeout_ms
        self._wall_clock = wall_clock
        # Keyed by the tokens ``_call`` hands out; the machine echoes them back as the
        # Hashable waiters its outputs answer.
        self._waiters: dict[Hashable, asyncio.Future[Any]] = {}
        self._tokens = itertools.count(1)
        # Partitions led here -> the leader epoch their load is for.
        self._led_epochs: dict[int, int] = {}
        self._load_tasks: dict[int, asyncio.Task[None]] = {}
        self._closed = False

    # --- hooks --------------------------------------------------------------------------------

    def process(self, out: OutputsT) -> None:
        raise NotImplementedError

    def _begin_loading(self, partition: int, epoch: int) -> OutputsT:
        raise NotImplementedError

    async def _read_partition(self, tp: TopicPartition, epoch: int) -> None:
        raise NotImplementedError

    def _complete_loading(self, partition: int) -> OutputsT:
        raise NotImplementedError

    def _unload(self, partition: int) -> OutputsT:
        raise NotImplementedError

    def _refresh_partition_count(self) -> None:
        raise NotImplementedError

    def _complete_write(self, write_id: int, error_code: int) -> OutputsT:
        """The machine's outputs for the outcome of its write ``write_id``."""
        raise NotImplementedError

    # --- writes -------------------------------------------------------------------------------

    def _append(self, write: RecordWrite) -> None:
        """Append ``write`` as one RecordBatch (no compression, record timestamps = wall
        clock; a transactional batch for a write carrying a producer id) through the
        partition writer, and hand its outcome to the machine."""
        tp = TopicPartition(self._topic, write.partition)
        now = self._wall_clock()
        records = [Record(k, v, now) for k, v in write.records]
        if write.producer_id >= 0:
            # Part of the producer's transaction on this partition (a TxnOffsetCommit): the
            # log checks its epoch; sequences are not used for coordinator writes.
            batch = build_batch(
                records,
                producer_id=write.producer_id,
                producer_epoch=write.producer_epoch,
                base_sequence=0,
                is_transactional=True,
            )
        else:
            batch = build_batch(records)
        loop = asyncio.get_running_loop()

        def on_replicated(code: int) -> None:
            # May be called from inside the writer: finish on the next loop turn, not
            # re-entrantly.
            loop.call_soon(self._write_done, write.write_id, code)

        error = self._writer.append(tp, batch, self._write_timeout_ms, on_replicated)
        if error != ErrorCode.NO_ERROR:
            self._write_done(write.write_id, error)

    def _write_done(self, write_id: int, error_code: int) -> None:
        if not self._closed:
            self.process(self._complete_write(write_id, error_code))

    # --- requests -----------------------------------------------------------------------------

    async def _call(self, fn: Callable[[int], OutputsT]) -> Any:
        """Run ``fn(token)`` on the machine and wait for the result it (or a later output)
        gives ``token``."""
        token = next(self._tokens)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiters[token] = future
        try:
            self.process(fn(token))
            return await future
        finally:
            self._waiters.pop(token, None)

    def _resolve(self, responses: Iterable[tuple[Hashable, Any]]) -> None:
        for token, result in responses:
            future = self._waiters.get(token)
            if future is not None and not future.done():
                future.set_result(result)

    # --- leadership and loading ---------------------------------------------------------------

    def on_partition_change(self, tp: TopicPartition) -> None:
        """``tp`` of the coordinator's topic changed: load it if this broker now leads it in
        a new epoch, unload it if it no longer does."""
        if self._closed or tp.topic != self._topic:
            return
        epoch = self._writer.leader_epoch(tp)
        p = tp.partition
        if epoch is not None:
            if self._led_epochs.get(p) == epoch:
                return
            self._led_epochs[p] = epoch
            self._refresh_partition_count()
            self.process(self._begin_loading(p, epoch))
            old = self._load_tasks.pop(p, None)
            if old is not None:
                old.cancel()
            task = asyncio.get_running_loop().create_task(self._load(p, epoch))
            self._load_tasks[p] = task
            task.add_done_callback(functools.partial(self._load_finished, p))
        elif p in self._led_epochs:
            del self._led_epochs[p]
            old = self._load_tasks.pop(p, None)
            if old is not None:
                old.cancel()
            logger.info("%s-%d: no longer the leader, unloading it", self._topic, p)
            self.process(self._unload(p))

    def _load_finished(self, p: int, task: asyncio.Task[None]) -> None:
        if self._load_tasks.get(p) is task:
            del self._load_tasks[p]
        if not task.cancelled() and task.exception() is not None:
            logger.error("%s-%d: loading failed", self._topic, p, exc_info=task.exception())

    async def _load(self, p: int, epoch: int) -> None:
        tp = TopicPartition(self._topic, p)
        for attempt in range(1, LOAD_MAX_ATTEMPTS + 1):
            try:
                await self._read_partition(tp, epoch)
                break
            except ApiError as e:
                logger.warning("%s: load attempt %d failed: %s", tp, attempt, e)
                self.process(self._begin_loading(p, epoch))
                await asyncio.sleep(LOAD_RETRY_BACKOFF_S)
        else:
            logger.error("%s: giving up loading after %d attempts", tp, LOAD_MAX_ATTEMPTS)
            return
        if self._led_epochs.get(p) == epoch:
            self.process(self._complete_loading(p))

    def _still_leading(self, p: int, epoch: int) -> Callable[[], bool]:
        return lambda: self._led_epochs.get(p) == epoch

    # --- lifecycle ----------------------------------------------------------------------------

    def close(self) -> None:
        self._closed = True
        for task in self._load_tasks.values():
            task.cancel()
        self._load_tasks.clear()
        for future in self._waiters.values():
            if not future.done():
                future.cancel()
