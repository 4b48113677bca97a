"""FrameReader: reassembly from arbitrary chunks and the size bound."""

from __future__ import annotations

import random
import struct

import pytest

from common.protocol.codec import MAX_REQUEST_BYTES
from common.protocol.errors import FrameTooLargeError, ProtocolError
from common.protocol.framing import FrameReader


def _framed(payloads: list[bytes]) -> bytes:
    return b"".join(struct.pack(">i", len(p)) + p for p in payloads)


def test_frames_survive_any_chunking():
    rng = random.Random(7)
    for _ in range(300):
        payloads = [rng.randbytes(rng.randint(0, 40)) for _ in range(rng.randint(1, 6))]
        stream = _framed(payloads)
        reader = FrameReader(max_frame_bytes=64)
        got: list[bytes] = []
        pos = 0
        while pos < len(stream):
            step = rng.randint(1, 30)
            chunk = stream[pos : pos + step]
            got += [
                bytes(f) for f in reader.feed(chunk if rng.random() < 0.5 else bytearray(chunk))
            ]
            pos += step
        assert got == payloads
        assert reader.buffered_bytes == 0 and reader.bytes_needed() == 4


def test_whole_frames_in_one_bytes_chunk_are_not_copied():
    data = _framed([b"abc", b"de"])
    frames = FrameReader().feed(data)
    assert all(isinstance(f, memoryview) and f.obj is data for f in frames)
    assert [bytes(f) for f in frames] == [b"abc", b"de"]


def test_bytes_needed_hint():
    reader = FrameReader()
    assert reader.bytes_needed() == 4
    assert reader.feed(b"\x00\x00") == []
    assert reader.bytes_needed() == 2
    assert reader.feed(b"\x00\x05ab") == []
    assert reader.bytes_needed() == 3


def test_oversized_prefix_fails_before_the_body_arrives():
    reader = FrameReader(max_frame_bytes=100)
    with pytest.raises(FrameTooLargeError) as info:
        reader.feed(struct.pack(">i", 101))  # only the prefix: nothing of the body buffered
    assert info.value.size_bytes == 101 and info.value.max_frame_bytes == 100
    with pytest.raises(ProtocolError):
        reader.feed(b"more")  # the stream is unusable afterwards


def test_oversized_prefix_split_across_chunks():
    reader = FrameReader(max_frame_bytes=100)
    reader.feed(b"\x00\x00")
    with pytest.raises(FrameTooLargeError):
        reader.feed(b"\x10\x00")


def test_frame_of_exactly_the_limit_is_accepted():
    reader = FrameReader(max_frame_bytes=5)
    assert [bytes(f) for f in reader.feed(_framed([b"12345"]))] == [b"12345"]


def test_negative_size_is_a_protocol_error():
    reader = FrameReader()
    with pytest.raises(ProtocolError, match="negative"):
        reader.feed(struct.pack(">i", -1) + b"xx")


def test_default_bound_is_socket_request_max_bytes():
    assert FrameReader().max_frame_bytes == MAX_REQUEST_BYTES == 104857600
    with pytest.raises(FrameTooLargeError):
        FrameReader().feed(struct.pack(">i", MAX_REQUEST_BYTES + 1))
