"""The flexible encodings (KIP-482): compact lengths, tagged fields and the v2/v1 headers.

A synthetic message with tagged fields at two levels exercises what the real flexible-only
APIs do not yet use (known tags, unknown tags skipped, tags sent only when not default);
hand-written bytes pin the wire layout; hostile lengths and counts get ProtocolError."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from common.protocol import codec
from common.protocol.api_keys import ApiKey
from common.protocol.compact_types import read_uvarint, uvarint
from common.protocol.compiler import compile_message
from common.protocol.errors import ProtocolError
from common.protocol.fields import ARRAY, INT32, INT64, STRING, F
from common.protocol.messages.describe_transactions import (
    DescribeTransactionsRequest,
    DescribeTransactionsResponse,
)
from common.protocol.messages.list_transactions import ListTransactionsRequest
from tests.unit.protocol.bodies import normalise

MESSAGE = (
    F("name", STRING),
    F("note", STRING, nullable=0),
    F("ids", ARRAY(INT64)),
    F("items", [
        F("index", INT32),
        F("label", STRING, nullable=0),
        F("weight", INT32, tag=0, default=-1),
    ], nullable=0),
    F("cluster_id", STRING, tag=0, nullable=0),
    F("epoch", INT32, tag=3, default=-1),
    F("aliases", ARRAY(STRING), tag=1),
)  # fmt: skip
FLEX = compile_message(MESSAGE, 0, "synthetic", flexible=True)


def encode(body: dict) -> bytes:
    out = bytearray()
    cuts: list = []
    FLEX.encode(out, body, cuts)
    assert not cuts
    return bytes(out)


def decode(data: bytes) -> dict:
    body, end = FLEX.decode(memoryview(data), 0, 10_000)
    assert end == len(data)
    return body


def test_wire_layout_of_compact_values_and_tags() -> None:
    body = {"name": "ab", "note": None, "ids": [1], "items": None, "epoch": 5}
    data = encode(body)
    assert data == (
        b"\x03ab"  # compact string: length + 1
        + b"\x00"  # null compact string
        + b"\x02" + struct.pack(">q", 1)  # compact array of one int64
        + b"\x00"  # null compact array
        + b"\x01"  # one tagged field (only epoch differs from its default)
        + b"\x03\x04" + struct.pack(">i", 5)  # tag 3, size 4, value
    )  # fmt: skip
    assert decode(data) == {**body, "cluster_id": None, "aliases": []}


@settings(max_examples=200, deadline=None)
@given(
    name=st.text(max_size=20),
    note=st.none() | st.text(max_size=5),
    ids=st.lists(st.integers(-(2**63), 2**63 - 1), max_size=4),
    items=st.none()
    | st.lists(
        st.fixed_dictionaries(
            {
                "index": st.integers(-(2**31), 2**31 - 1),
                "label": st.none() | st.text(max_size=5),
                "weight": st.integers(-(2**31), 2**31 - 1),
            }
        ),
        max_size=3,
    ),
    cluster_id=st.none() | st.text(max_size=5),
    epoch=st.integers(-(2**31), 2**31 - 1),
    aliases=st.lists(st.text(max_size=4), max_size=3),
)
def test_round_trip(name, note, ids, items, cluster_id, epoch, aliases) -> None:
    body = {
        "name": name,
        "note": note,
        "ids": ids,
        "items": items,
        "cluster_id": cluster_id,
        "epoch": epoch,
        "aliases": aliases,
    }
    assert normalise(decode(encode(body))) == body


def test_unknown_tags_are_skipped_at_every_level() -> None:
    known = encode({"name": "x", "items": [{"index": 1, "label": "l", "weight": 9}]})
    # Rebuild with an unknown tag 7 (3 bytes) before the struct's known tag 0 and at the end.
    data = (
        b"\x02x" + b"\x00" + b"\x01"  # name, null note, empty ids
        + b"\x02" + struct.pack(">i", 1) + b"\x02l"  # one item: index, label
        + b"\x02" + b"\x00\x04" + struct.pack(">i", 9) + b"\x07\x03abc"  # its tags
        + b"\x01" + b"\x07\x03xyz"  # the message's tags: only an unknown one
    )  # fmt: skip
    assert decode(data) == decode(known)
    assert decode(data)["items"][0]["weight"] == 9


@pytest.mark.parametrize(
    "data",
    [
        b"\x05ab",  # string longer than the frame
        b"\x80\x80\x80\x80\x80\x01",  # a six-byte varint
        b"\x02x\x00\x01\xff\xff\xff\x0f",  # an array count far beyond the frame
        b"\x02x\x00\x01\x00\x7f",  # 127 tagged fields in one byte
        b"\x02x\x00\x01\x00\x01\x03\x09\x00",  # a tag whose size overruns the frame
        b"\x02x\x00\x01\x00\x01\x03\x02\x00\x00",  # epoch (4 bytes) inside a 2-byte tag
        b"\x02\xff",  # invalid UTF-8
        b"\x00",  # null in a non-nullable string
    ],
)
def test_hostile_input_is_a_protocol_error(data: bytes) -> None:
    with pytest.raises((ProtocolError, struct.error, UnicodeDecodeError)):
        FLEX.decode(memoryview(data), 0, 10_000)


def test_codec_turns_every_hostile_flexible_request_into_protocol_error() -> None:
    request = ListTransactionsRequest(state_filters=["x"])
    frame = codec.encode_request(ApiKey.LIST_TRANSACTIONS, 1, 5, "c", request)
    body = frame[4:]
    for cut in range(len(body)):
        with pytest.raises(ProtocolError):
            codec.decode_request(body[:cut])
    header_end = 2 + 2 + 4 + 2 + 1
    bad_tags = body[:header_end] + b"\x7f" + body[header_end + 1 :]
    with pytest.raises(ProtocolError):
        codec.decode_request(bad_tags)


@pytest.mark.parametrize("value", [0, 1, 127, 128, 300, 16_383, 16_384, 2**31 - 1, 2**32 - 1])
def test_uvarint_round_trip(value: int) -> None:
    data = uvarint(value)
    assert read_uvarint(memoryview(data + b"rest"), 0) == (value, len(data))


def test_request_header_v2_tags_are_skipped_and_response_header_v1_written() -> None:
    request = DescribeTransactionsRequest()
    frame = bytearray(codec.encode_request(ApiKey.DESCRIBE_TRANSACTIONS, 0, 9, "cli", request))
    # Put one unknown tagged field into the request header (after the client id).
    at = 4 + 2 + 2 + 4 + 2 + 3
    assert frame[at] == 0
    frame[at : at + 1] = b"\x01\x05\x02hi"
    header, body = codec.decode_request(bytes(frame[4:]))
    assert header == codec.RequestHeader(ApiKey.DESCRIBE_TRANSACTIONS, 0, 9, "cli")
    assert body == DescribeTransactionsRequest(transactional_ids=[])
    answer = DescribeTransactionsResponse(transaction_states=[])
    response = codec.encode_response(header, answer).to_bytes()
    assert response[4:9] == struct.pack(">i", 9) + b"\x00"  # header v1: empty tags
    assert codec.decode_response(ApiKey.DESCRIBE_TRANSACTIONS, 0, response[4:]) == (
        9,
        DescribeTransactionsResponse(throttle_time_ms=0, transaction_states=[]),
    )
