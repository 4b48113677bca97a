"""The broker's producer id blocks (sans-IO) and ProducerIdManager against a scripted
allocator (the controller's answers), plus the InitProducerId handler's refusals."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading

import pytest

from common.error_codes import ErrorCode
from data_plane.broker.producer_ids import (
    InvalidProducerIdBlockError,
    ProducerIdBlocks,
    ProducerIdManager,
    ProducerIdsUnavailableError,
)
from metadata.messages import AllocateProducerIdsResponse

BLOCK = 10


def test_blocks_hand_out_ids_in_order_and_prefetch_near_the_end() -> None:
    blocks = ProducerIdBlocks()
    assert blocks.next_id() is None and blocks.needs_block()
    blocks.add_block(100, BLOCK)
    assert not blocks.needs_block()
    got = [blocks.next_id() for _ in range(BLOCK - 1)]
    assert got == list(range(100, 109))
    assert blocks.needs_block()  # 1 of 10 left: at the 10% threshold
    blocks.add_block(200, BLOCK)  # prefetched
    assert not blocks.needs_block()
    assert blocks.next_id() == 109
    assert blocks.next_id() == 200  # switches to the prefetched block
    with pytest.raises(InvalidProducerIdBlockError):
        blocks.add_block(150, BLOCK)  # below ids already held
    with pytest.raises(InvalidProducerIdBlockError):
        blocks.add_block(300, 0)


class ScriptedAllocator:
    """Answers AllocateProducerIds like the controller: consecutive blocks; the first
    ``failures`` calls fail."""

    def __init__(self, failures: int = 0, error_code: int = 0) -> None:
        self.next_start = 1000
        self.failures = failures
        self.error_code = error_code
        self.calls: list[tuple[int, int]] = []
        self.lock = threading.Lock()

    def allocate_producer_ids(self, broker_id: int, broker_epoch: int):
        with self.lock:
            self.calls.append((broker_id, broker_epoch))
            if self.failures > 0:
                self.failures -= 1
                raise ConnectionError("controller unreachable")
            if self.error_code:
                return AllocateProducerIdsResponse(self.error_code, "refused")
            start = self.next_start
            self.next_start += BLOCK
            return AllocateProducerIdsResponse(0, None, start, BLOCK)


def run(coro):
    return asyncio.run(coro)


def test_manager_waits_for_first_block_and_never_repeats_ids() -> None:
    alloc = ScriptedAllocator(failures=2)
    with concurrent.futures.ThreadPoolExecutor(2) as ex:

        async def main() -> list[int]:
            m = ProducerIdManager(7, lambda: 3, alloc, ex, retry_backoff_ms=10)
            try:
                return [await m.generate_producer_id(5000) for _ in range(35)]
            finally:
                m.close()

        ids = run(main())
    assert ids == sorted(set(ids)) and len(ids) == 35
    assert ids[0] == 1000
    assert all(call == (7, 3) for call in alloc.calls)
    # Prefetching kept at most one extra block ahead: 4 blocks used, at most 5 asked for.
    assert 4 <= len(alloc.calls) - 2 <= 5


def test_manager_times_out_retriably_when_controller_refuses() -> None:
    alloc = ScriptedAllocator(error_code=ErrorCode.STALE_BROKER_EPOCH)
    with concurrent.futures.ThreadPoolExecutor(1) as ex:

        async def main() -> None:
            m = ProducerIdManager(1, lambda: 1, alloc, ex, retry_backoff_ms=10)
            try:
                with pytest.raises(ProducerIdsUnavailableError) as e:
                    await m.generate_producer_id(200)
                assert e.value.error_code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
            finally:
                m.close()

        run(main())
    assert alloc.calls


def test_manager_without_controller_answers_at_once() -> None:
    with concurrent.futures.ThreadPoolExecutor(1) as ex:

        async def main() -> None:
            m = ProducerIdManager(1, lambda: 1, None, ex)
            with pytest.raises(ProducerIdsUnavailableError):
                await m.generate_producer_id(10_000)

        run(main())
