"""ResponseFrames over real loopback sockets: frames split anywhere arrive whole, in order,
each in its own buffer; bad sizes and a closed peer fail the stream for good."""

from __future__ import annotations

import asyncio
import contextlib
import random
import struct
from collections.abc import Awaitable, Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from common.protocol.errors import FrameTooLargeError, ProtocolError
from data_plane.replication.response_frames import ResponseFrames

MAX_FRAME = 1 << 20
DEADLINE_S = 30.0


def frame(body: bytes) -> bytes:
    return struct.pack(">i", len(body)) + body


Serve = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


@contextlib.asynccontextmanager
async def _connected(serve: Serve):
    """A ResponseFrames client of a loopback server running ``serve`` for it; on exit the
    client closes first, then the server once ``serve`` has returned."""
    served = asyncio.Event()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await serve(reader, writer)
        except ConnectionError:
            pass
        finally:
            writer.close()
            served.set()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    transport, frames = await asyncio.get_running_loop().create_connection(
        lambda: ResponseFrames(MAX_FRAME, "test peer"), "127.0.0.1", port
    )
    try:
        yield frames
    finally:
        transport.close()
        await asyncio.wait_for(served.wait(), DEADLINE_S)
        server.close()
        await server.wait_closed()


async def _with_peer(send_chunks: list[bytes], take: int, *, close: bool = False):
    """Serve ``send_chunks`` (each written and drained alone) to a ResponseFrames client and
    return (the first ``take`` frames, or the exception that ended them)."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        for chunk in send_chunks:
            writer.write(chunk)
            await writer.drain()
            await asyncio.sleep(0)
        if not close:
            await reader.read()  # until the client goes

    got: list[bytes] = []
    error: BaseException | None = None
    async with _connected(serve) as frames:
        try:
            for _ in range(take):
                got.append(bytes(await asyncio.wait_for(frames.next_frame(), DEADLINE_S)))
        except (EOFError, ProtocolError) as e:
            error = e
    return got, error, frames


@settings(max_examples=40, deadline=None)
@given(
    bodies=st.lists(st.binary(max_size=3000), min_size=1, max_size=6),
    seed=st.integers(0, 2**32 - 1),
)
def test_frames_split_anywhere_arrive_whole_and_in_order(bodies: list[bytes], seed: int) -> None:
    stream = b"".join(frame(b) for b in bodies)
    rng = random.Random(seed)
    cuts = sorted(rng.sample(range(1, len(stream)), min(len(stream) - 1, rng.randint(0, 8))))
    chunks = [stream[a:b] for a, b in zip([0, *cuts], [*cuts, len(stream)], strict=True)]
    got, error, _ = asyncio.run(_with_peer(chunks, len(bodies)))
    assert error is None
    assert got == bodies


def test_each_frame_is_its_own_writable_buffer() -> None:
    async def run() -> list[bytearray]:
        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            writer.write(frame(b"a" * 70_000) + frame(b"b" * 5))
            await writer.drain()
            await reader.read()

        async with _connected(serve) as frames:
            first = await asyncio.wait_for(frames.next_frame(), DEADLINE_S)
            second = await asyncio.wait_for(frames.next_frame(), DEADLINE_S)
        return [first, second]

    first, second = asyncio.run(run())
    assert isinstance(first, bytearray) and isinstance(second, bytearray)
    assert first == b"a" * 70_000 and second == b"b" * 5
    first[0:1] = b"z"  # writable, and not shared with the next frame
    assert second == b"b" * 5


def test_an_empty_frame_is_delivered() -> None:
    got, error, _ = asyncio.run(_with_peer([frame(b""), frame(b"x")], 2))
    assert error is None and got == [b"", b"x"]


def test_the_peer_closing_fails_the_wait_with_eof_after_the_whole_frames() -> None:
    got, error, _ = asyncio.run(_with_peer([frame(b"one"), frame(b"two")[:5]], 3, close=True))
    assert got == [b"one"]
    assert isinstance(error, EOFError) and "test peer" in str(error)


@pytest.mark.parametrize(
    ("size", "error"),
    [(-1, ProtocolError), (MAX_FRAME + 1, FrameTooLargeError)],
)
def test_a_bad_size_fails_the_stream_for_good(size: int, error: type[Exception]) -> None:
    got, raised, frames = asyncio.run(
        _with_peer([frame(b"ok"), struct.pack(">i", size), b"\0" * 64], 3)
    )
    assert got == [b"ok"]
    assert isinstance(raised, error)

    async def again() -> None:
        await frames.next_frame()

    with pytest.raises(error):
        asyncio.run(again())


def test_a_wait_with_a_timeout_fails_with_timeout_error_and_the_frame_still_arrives() -> None:
    async def main() -> None:
        release = asyncio.Event()

        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await release.wait()
            writer.write(frame(b"late"))
            await writer.drain()
            await reader.read()  # until the client goes

        async with _connected(serve) as frames:
            with pytest.raises(TimeoutError):
                await frames.next_frame(0.05)
            release.set()
            # The frame that came too late is kept: the caller sees it as pending.
            assert bytes(await frames.next_frame(DEADLINE_S)) == b"late"

    asyncio.run(main())
