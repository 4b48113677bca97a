"""Our encoder and decoder against each other (hypothesis), zero-copy records, defaults,
encode-side errors and the trailing-bytes rule."""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from common.protocol import codec
from common.protocol.api_keys import ApiKey
from common.protocol.codec import EncodeError, ProtocolError, RequestHeader
from common.protocol.compiler import ZERO_COPY_MIN_BYTES
from common.protocol.messages.heartbeat import HeartbeatRequest
from common.protocol.schemas import MESSAGES
from tests.unit.protocol.bodies import body_strategy, normalise, typed
from tests.unit.protocol.conftest import ALL_IDS, ALL_VERSIONS

ROUND_TRIP = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize(("api_key", "version"), ALL_VERSIONS, ids=ALL_IDS)
@ROUND_TRIP
@given(data=st.data())
def test_request_round_trip(api_key, version, data):
    body = typed(api_key, True, data.draw(body_strategy(MESSAGES[api_key][0], version)))
    frame = codec.encode_request(api_key, version, 11, "c", body)
    assert struct.unpack_from(">i", frame)[0] == len(frame) - 4
    header, decoded = codec.decode_request(frame[4:])
    assert header == RequestHeader(api_key, version, 11, "c")
    assert normalise(decoded) == normalise(body)


@pytest.mark.parametrize(("api_key", "version"), ALL_VERSIONS, ids=ALL_IDS)
@ROUND_TRIP
@given(data=st.data())
def test_response_round_trip(api_key, version, data):
    body = data.draw(body_strategy(MESSAGES[api_key][1], version))
    if api_key == ApiKey.API_VERSIONS and body["error_code"] == 35:
        body["error_code"] = 0  # 35 switches decoding to the v0 fallback format
    body = typed(api_key, False, body)
    frame = codec.encode_response(RequestHeader(api_key, version, -3, None), body)
    raw = frame.to_bytes()
    assert len(raw) == frame.total_length
    correlation_id, decoded = codec.decode_response(api_key, version, raw[4:])
    assert correlation_id == -3
    assert normalise(decoded) == normalise(body)


def _produce_body(records) -> dict:
    return {
        "transactional_id": None,
        "acks": -1,
        "timeout_ms": 30000,
        "topic_data": [{"name": "t", "partition_data": [{"index": 0, "records": records}]}],
    }


def test_decoded_records_are_views_of_the_frame():
    frame = bytearray(codec.encode_request(0, 7, 1, None, _produce_body(b"batch-bytes"))[4:])
    _, body = codec.decode_request(frame)
    records = body["topic_data"][0]["partition_data"][0]["records"]
    assert isinstance(records, memoryview) and records == b"batch-bytes"
    frame[-1:] = b"!"  # the view shares memory with the frame: no copy was made
    assert bytes(records) == b"batch-byte!"


def test_decode_matches_contract_example():
    frame = codec.encode_request(0, 7, 1, None, _produce_body(b"x"))
    _, body = codec.decode_request(frame[4:])
    assert normalise(body) == {
        "transactional_id": None,
        "acks": -1,
        "timeout_ms": 30000,
        "topic_data": [{"name": "t", "partition_data": [{"index": 0, "records": b"x"}]}],
    }


@dataclass
class FileSlice:
    fileno: int
    position: int
    length: int


def _fetch_body(records) -> dict:
    partition = {"partition_index": 0, "high_watermark": 10, "records": records}
    return {"responses": [{"topic": "t", "partitions": [partition, dict(partition)]}]}


def test_file_slice_records_become_separate_parts(tmp_path):
    path = tmp_path / "segment.log"
    path.write_bytes(b"0123456789abcdef")
    fd = os.open(path, os.O_RDONLY)
    try:
        first, second = FileSlice(fd, 2, 5), FileSlice(fd, 10, 6)
        body = _fetch_body(None)
        body["responses"][0]["partitions"][0]["records"] = first
        body["responses"][0]["partitions"][1]["records"] = second
        frame = codec.encode_response(RequestHeader(1, 11, 8, None), body)
        assert [type(p) for p in frame.parts] == [memoryview, FileSlice, memoryview, FileSlice]
        assert frame.parts[1] is first and frame.parts[3] is second
        raw = frame.to_bytes()
        assert len(raw) == frame.total_length == struct.unpack_from(">i", raw)[0] + 4
        _, decoded = codec.decode_response(1, 11, raw[4:])
        partitions = decoded["responses"][0]["partitions"]
        assert [bytes(p["records"]) for p in partitions] == [b"23456", b"abcdef"]
    finally:
        os.close(fd)


def test_large_buffers_are_passed_through_not_copied():
    big = memoryview(bytes(range(256)) * (ZERO_COPY_MIN_BYTES // 256 + 1))
    frame = codec.encode_response(RequestHeader(1, 4, 8, None), _fetch_body(big))
    assert sum(part is big for part in frame.parts) == 2
    _, decoded = codec.decode_response(1, 4, frame.to_bytes()[4:])
    assert bytes(decoded["responses"][0]["partitions"][1]["records"]) == bytes(big)


def test_missing_fields_take_schema_defaults():
    frame = codec.encode_response(RequestHeader(1, 11, 0, None), {"responses": [{"topic": "t",
                                  "partitions": [{"partition_index": 3}]}]})  # fmt: skip
    _, body = codec.decode_response(1, 11, frame.to_bytes()[4:])
    partition = body["responses"][0]["partitions"][0]
    assert partition == {
        "partition_index": 3,
        "error_code": 0,
        "high_watermark": 0,
        "last_stable_offset": -1,
        "log_start_offset": -1,
        "aborted_transactions": None,
        "preferred_read_replica": -1,
        "records": None,
    }
    assert body["throttle_time_ms"] == 0 and body["session_id"] == 0


def test_fields_absent_in_a_version_are_absent_from_the_dict():
    _, body = codec.decode_request(codec.encode_request(0, 2, 1, None, _produce_body(b""))[4:])
    assert "transactional_id" not in body


@pytest.mark.parametrize(
    "body",
    [
        {"acks": 1 << 20},  # int16 out of range
        {"acks": "1"},
        {"topic_data": [{"name": None}]},  # non-nullable string
        {"topic_data": None},  # non-nullable array
        {"topic_data": [{"name": "x" * 40000}]},
        {"topic_data": [{"name": "t", "partition_data": [{"records": 17}]}]},
        {"topic_data": [3]},
    ],
)
def test_bodies_that_do_not_fit_raise_encode_error(body):
    with pytest.raises(EncodeError, match="PRODUCE v7"):
        codec.encode_request(0, 7, 1, None, body)


def test_trailing_bytes_after_the_body_are_ignored():
    request = HeartbeatRequest(group_id="g", generation_id=2)
    frame = codec.encode_request(ApiKey.HEARTBEAT, 3, 4, "c", request)[4:]
    _, body = codec.decode_request(frame + b"future fields")
    assert body.group_id == "g" and body.generation_id == 2


def test_invalid_utf8_is_a_protocol_error():
    frame = codec.encode_request(ApiKey.HEARTBEAT, 0, 4, "c", HeartbeatRequest(group_id="gg"))[4:]
    start = frame.index(b"gg")
    bad = frame[:start] + b"\xff\xfe" + frame[start + 2 :]
    with pytest.raises(ProtocolError, match="UTF-8"):
        codec.decode_request(bad)
    with pytest.raises(ProtocolError, match="UTF-8"):
        codec.decode_request(frame[:10] + b"\xff" + frame[11:])  # in the client id


def test_truncated_header_and_body_are_protocol_errors():
    frame = codec.encode_request(0, 7, 1, "c", _produce_body(b"abc"))[4:]
    for cut in range(len(frame)):
        with pytest.raises(ProtocolError):
            codec.decode_request(frame[:cut])
    with pytest.raises(ProtocolError):
        codec.decode_response(0, 7, b"\x00\x00")


def test_non_byte_input_is_a_protocol_error():
    with pytest.raises(ProtocolError):
        codec.decode_request(12345)  # type: ignore[arg-type]
    frame = codec.encode_request(ApiKey.HEARTBEAT, 0, 4, "c", HeartbeatRequest(group_id="g"))[4:]
    header, _ = codec.decode_request(memoryview(frame + b"\0\0").cast("H"))
    assert header.api_key == 12


def test_precompile_covers_every_supported_version_and_nothing_else():
    codec.precompile()
    assert set(codec._REQUESTS) == set(codec._RESPONSES) == set(ALL_VERSIONS)
    for api_key, version in [(999, 0), (0, 99), (-1, 0), (18, 5)]:
        frame = struct.pack(">hhih", api_key, version, 1, -1)
        with pytest.raises(codec.UnsupportedVersionError):
            codec.decode_request(frame)
    assert len(codec._REQUESTS) == len(ALL_VERSIONS)  # unsupported pairs are never cached


def test_large_records_in_a_request_are_framed_whole():
    big = bytes(range(256)) * (ZERO_COPY_MIN_BYTES // 256 + 3)
    frame = codec.encode_request(0, 7, 5, "c", _produce_body(memoryview(big)))
    assert struct.unpack_from(">i", frame)[0] == len(frame) - 4
    _, body = codec.decode_request(frame[4:])
    assert bytes(body["topic_data"][0]["partition_data"][0]["records"]) == big
