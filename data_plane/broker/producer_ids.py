"""Producer ids for InitProducerId: blocks of ids allocated by the controller, handed out one
at a time by the broker (Kafka's RPCProducerIdManager).

The controller's AllocateProducerIds gives this broker a block of consecutive ids (its next
id is in the metadata log, so no id is ever handed out twice, across brokers and controller
failovers). :class:`ProducerIdBlocks` is the sans-IO core: the current block, at most one
prefetched next block, and the decision to prefetch once fewer than
``prefetch_threshold`` of the current block remain, so a busy broker never waits for the
controller. :class:`ProducerIdManager` runs the blocking gRPC call on an executor thread,
one call at a time, and lets :meth:`ProducerIdManager.generate_producer_id` wait (bounded)
for a block when none is left: a first InitProducerId after start waits for one round trip.

Thread-safety: every method runs on the broker's event loop; only the controller call runs
on the executor.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
from collections.abc import Callable
from typing import Protocol

from common.error_codes import ErrorCode
from data_plane.broker.errors import BrokerRequestError
from metadata.messages import AllocateProducerIdsResponse

logger = logging.getLogger(__name__)

# Prefetch the next block once less than this fraction of the current one is left (Kafka: 10%).
PREFETCH_FRACTION = 0.1
DEFAULT_RETRY_BACKOFF_MS = 100


class ProducerIdAllocator(Protocol):
    def allocate_producer_ids(
        self, broker_id: int, broker_epoch: int
    ) -> AllocateProducerIdsResponse: ...


class ProducerIdsUnavailableError(BrokerRequestError):
    """No producer id block could be obtained from the controller in time; retriable, as
    Kafka answers while its id manager waits for a block."""

    error_code = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS


class InvalidProducerIdBlockError(ValueError):
    """A block that is empty or overlaps ids already handed out."""


class ProducerIdBlocks:
    """Sans-IO: the current block ``[next_id, end)`` and an optional prefetched block."""

    def __init__(self) -> None:
        self._next_id = 0
        self._end = 0  # exclusive; next_id == end means no id left
        self._block_len = 0
        self._prefetched: tuple[int, int] | None = None

    @property
    def remaining(self) -> int:
        return self._end - self._next_id

    def add_block(self, start: int, length: int) -> None:
        """A block from the controller: becomes current if the current one is used up,
        otherwise it waits as the prefetched block."""
        if length <= 0 or start < 0:
            raise InvalidProducerIdBlockError(f"producer id block [{start}, +{length})")
        if start < self._end:
            raise InvalidProducerIdBlockError(
                f"producer id block at {start} is below ids already held (up to {self._end})"
            )
        if self.remaining == 0:
            self._next_id, self._end, self._block_len = start, start + length, length
        elif self._prefetched is None:
            self._prefetched = (start, length)
        else:
            raise InvalidProducerIdBlockError("a prefetched producer id block is already held")

    def needs_block(self) -> bool:
        """Ask the controller now: no prefetched block and the current one is nearly used."""
        if self._prefetched is not None:
            return False
        return self.remaining <= int(self._block_len * PREFETCH_FRACTION)

    def next_id(self) -> int | None:
        """The next id, or None when both blocks are used up."""
        if self.remaining == 0 and self._prefetched is not None:
            start, length = self._prefetched
            self._prefetched = None
            self._next_id, self._end, self._block_len = start, start + length, length
        if self.remaining == 0:
            return None
        pid = self._next_id
        self._next_id += 1
        return pid


class ProducerIdManager:
    def __init__(
        self,
        broker_id: int,
        broker_epoch: Callable[[], int],
        allocator: ProducerIdAllocator | None,
        executor: concurrent.futures.Executor,
        *,
        retry_backoff_ms: int = DEFAULT_RETRY_BACKOFF_MS,
    ) -> None:
        self.broker_id = broker_id
        self._broker_epoch = broker_epoch
        self._allocator = allocator
        self._executor = executor
        self.retry_backoff_ms = retry_backoff_ms
        self.blocks = ProducerIdBlocks()
        self._fetch: asyncio.Task[None] | None = None
        self._closed = False
        self.requests_sent = 0

    async def generate_producer_id(self, timeout_ms: int) -> int:
        """A fresh producer id; waits up to ``timeout_ms`` for a block when none is left.
        Raises :class:`ProducerIdsUnavailableError` (COORDINATOR_LOAD_IN_PROGRESS, retriable)
        when no block arrived in time or there is no controller to ask."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max(0, timeout_ms) / 1000
        while True:
            pid = self.blocks.next_id()
            if self.blocks.needs_block():
                self._start_fetch()
            if pid is not None:
                return pid
            task = self._fetch
            left = deadline - loop.time()
            if task is None or left <= 0 or self._closed:
                raise ProducerIdsUnavailableError("no producer id block from the controller yet")
            try:
                await asyncio.wait_for(asyncio.shield(task), left)
            except TimeoutError:
                raise ProducerIdsUnavailableError(
                    f"no producer id block from the controller within {timeout_ms} ms"
                ) from None

    def _start_fetch(self) -> None:
        if self._allocator is None or self._closed:
            return
        if self._fetch is None or self._fetch.done():
            self._fetch = asyncio.get_running_loop().create_task(self._fetch_block())

    async def _fetch_block(self) -> None:
        """Ask the controller until a block arrives (backing off after a failure)."""
        loop = asyncio.get_running_loop()
        allocator = self._allocator
        if allocator is None:
            return
        while not self._closed:
            self.requests_sent += 1
            try:
                resp = await loop.run_in_executor(
                    self._executor,
                    allocator.allocate_producer_ids,
                    self.broker_id,
                    self._broker_epoch(),
                )
            except asyncio.CancelledError:
                raise
            except Exception as e:  # controller unreachable, timeout, executor shut down
                logger.warning("AllocateProducerIds failed: %s", e)
                await asyncio.sleep(self.retry_backoff_ms / 1000)
                continue
            if resp.error_code != ErrorCode.NO_ERROR:
                logger.warning(
                    "AllocateProducerIds refused: %s (%s)", resp.error_code, resp.error_message
                )
                await asyncio.sleep(self.retry_backoff_ms / 1000)
                continue
            try:
                self.blocks.add_block(resp.producer_id_start, resp.producer_id_len)
            except InvalidProducerIdBlockError as e:
                logger.error("controller sent an unusable producer id block: %s", e)
                await asyncio.sleep(self.retry_backoff_ms / 1000)
                continue
            logger.info(
                "producer id block [%d, %d) from the controller",
                resp.producer_id_start,
                resp.producer_id_start + resp.producer_id_len,
            )
            return

    def close(self) -> None:
        self._closed = True
        if self._fetch is not None:
            self._fetch.cancel()
