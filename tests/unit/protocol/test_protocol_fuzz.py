"""Bad input: whatever the bytes, the decoders raise ProtocolError (or UnsupportedVersionError)
or return a body, never anything else.

The mutation fuzzer starts from valid frames of every supported (api, version), request and
response, and applies seeded mutations: bit flips, truncations, splices of two frames, length
fields overwritten with boundary values, byte insertions and deletions, and header rewrites that
make one API's body parse as another's. ``KRAFTLOG_FUZZ_ITERATIONS`` (default 100000) sets the
number of request inputs; ``KRAFTLOG_FUZZ_SEED`` the seed. Hypothesis adds structured inputs
(plausible length fields and strings in random order).
"""

from __future__ import annotations

import os
import random
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from common.protocol import codec
from common.protocol.api_keys import SUPPORTED_VERSIONS
from common.protocol.codec import ProtocolError, UnsupportedVersionError
from common.protocol.schemas import MESSAGES
from tests.unit.protocol.bodies import normalise, sample_body, typed
from tests.unit.protocol.conftest import ALL_VERSIONS

ITERATIONS = int(os.environ.get("KRAFTLOG_FUZZ_ITERATIONS", "100000"))
SEED = int(os.environ.get("KRAFTLOG_FUZZ_SEED", "20261121"))

SUPPORTED_PAIRS = set(ALL_VERSIONS)
_BOUNDARY_I16 = [0, 1, -1, -2, 0x7FFF, -0x8000, 2, 255, 256]
_BOUNDARY_I32 = [0, 1, -1, -2, 0x7FFFFFFF, -0x80000000, 0x10000, 2**24, 255, 7]


def _empty_body(fields, version: int) -> dict:
    return {f.name: None for f in fields if f.present_in(version) and f.nullable_in(version)}


def _request_corpus() -> list[bytes]:
    corpus = []
    for api_key, version in ALL_VERSIONS:
        fields = MESSAGES[api_key][0]
        for body in (sample_body(fields, version), {}, _empty_body(fields, version)):
            frame = codec.encode_request(api_key, version, 99, "fuzz", typed(api_key, True, body))
            corpus.append(frame[4:])
    return corpus


def _response_corpus() -> list[tuple[int, int, bytes]]:
    corpus = []
    for api_key, version in ALL_VERSIONS:
        fields = MESSAGES[api_key][1]
        for body in (sample_body(fields, version), {}):
            header = codec.RequestHeader(api_key, version, 5, None)
            frame = codec.encode_response(header, typed(api_key, False, body)).to_bytes()
            corpus.append((api_key, version, frame[4:]))
    return corpus


def _mutate(rng: random.Random, frame: bytes, corpus: list[bytes]) -> bytes:
    data = bytearray(frame)
    choice = rng.randrange(8)
    if choice == 0 and data:  # bit flips
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(len(data))
            data[i] ^= 1 << rng.randrange(8)
    elif choice == 1:  # truncation
        del data[rng.randrange(len(data) + 1) :]
    elif choice == 2:  # splice with another frame
        other = rng.choice(corpus)
        data = data[: rng.randrange(len(data) + 1)] + other[rng.randrange(len(other) + 1) :]
    elif choice == 3 and len(data) >= 2:  # int16 length field -> boundary value
        i = rng.randrange(len(data) - 1)
        struct.pack_into(">h", data, i, rng.choice(_BOUNDARY_I16))
    elif choice == 4 and len(data) >= 4:  # int32 count/length -> boundary value
        i = rng.randrange(len(data) - 3)
        value = rng.choice([*_BOUNDARY_I32, len(data) - i, len(data) - i - 3])
        struct.pack_into(">i", data, i, max(-(2**31), min(2**31 - 1, value)))
    elif choice == 5:  # insert random bytes
        i = rng.randrange(len(data) + 1)
        data[i:i] = rng.randbytes(rng.randint(1, 8))
    elif choice == 6 and data:  # delete a range
        i = rng.randrange(len(data))
        del data[i : i + rng.randint(1, 8)]
    elif len(data) >= 4:  # another api key/version over this body (schema confusion)
        api_key, version = rng.choice(ALL_VERSIONS)
        if rng.random() < 0.1:
            api_key, version = rng.choice([(999, 0), (api_key, 99), (-1, -1), (api_key, -1)])
        struct.pack_into(">hh", data, 0, api_key, version)
    return bytes(data)


def test_fuzz_decode_request_mutations():
    rng = random.Random(SEED)
    corpus = _request_corpus()
    outcomes = {"ok": 0, "protocol_error": 0, "unsupported": 0}
    failures: list[str] = []
    for i in range(ITERATIONS):
        frame = _mutate(rng, rng.choice(corpus), corpus)
        if rng.random() < 0.2:  # stack a second mutation
            frame = _mutate(rng, frame, corpus)
        try:
            header, body = codec.decode_request(frame)
        except UnsupportedVersionError as exc:
            assert (exc.header.api_key, exc.header.api_version) not in SUPPORTED_PAIRS
            outcomes["unsupported"] += 1
            continue
        except ProtocolError:
            outcomes["protocol_error"] += 1
            continue
        except Exception as exc:  # the property under test: nothing else escapes
            failures.append(f"#{i} {type(exc).__name__}: {exc} frame={frame.hex()}")
            continue
        outcomes["ok"] += 1
        if i % 16 == 0:
            # A body we accepted re-encodes and decodes to the same values.
            again = codec.encode_request(
                header.api_key, header.api_version, header.correlation_id, header.client_id, body
            )
            assert normalise(codec.decode_request(again[4:])[1]) == normalise(body)
    assert not failures, "\n".join(failures[:20])
    # The fuzzer exercises every outcome, so the property is not trivially satisfied.
    assert min(outcomes.values()) > ITERATIONS // 100, outcomes


def test_fuzz_decode_request_unsupported_headers_keep_the_header():
    rng = random.Random(SEED + 1)
    for _ in range(2000):
        api_key = rng.randrange(-(2**15), 2**15)
        version = rng.randrange(-(2**15), 2**15)
        low_high = SUPPORTED_VERSIONS.get(api_key)  # type: ignore[call-overload]
        if low_high is not None and low_high[0] <= version <= low_high[1]:
            continue
        frame = struct.pack(">hhih", api_key, version, 77, 3) + b"abc" + rng.randbytes(5)
        try:
            codec.decode_request(frame)
        except UnsupportedVersionError as exc:
            assert exc.header == codec.RequestHeader(api_key, version, 77, "abc")
            assert exc.error_code == 35
        else:
            raise AssertionError(f"api {api_key} v{version} was accepted")


def test_fuzz_decode_response_mutations():
    """The client side decoder has the same guarantee (a broker may be buggy or hostile)."""
    rng = random.Random(SEED + 2)
    corpus = _response_corpus()
    frames = [frame for _k, _v, frame in corpus]
    failures = []
    for i in range(max(1000, ITERATIONS // 5)):
        api_key, version, frame = rng.choice(corpus)
        mutated = _mutate(rng, frame[4:], frames)  # keep the correlation id, mutate the body
        mutated = frame[:4] + mutated
        try:
            codec.decode_response(api_key, version, mutated)
        except ProtocolError:
            pass
        except Exception as exc:
            failures.append(f"#{i} {type(exc).__name__}: {exc} frame={mutated.hex()}")
    assert not failures, "\n".join(failures[:20])


def _token() -> st.SearchStrategy[bytes]:
    i16 = st.sampled_from(_BOUNDARY_I16) | st.integers(-(2**15), 2**15 - 1)
    i32 = st.sampled_from(_BOUNDARY_I32) | st.integers(-(2**31), 2**31 - 1)
    return st.one_of(
        i16.map(lambda v: struct.pack(">h", v)),
        i32.map(lambda v: struct.pack(">i", v)),
        st.text(max_size=6).map(lambda s: struct.pack(">h", len(s.encode())) + s.encode()),
        st.binary(max_size=6),
        st.just(b"\xff\xfe\xfd"),  # invalid UTF-8
    )


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    target=st.sampled_from(ALL_VERSIONS),
    client_id=st.none() | st.text(max_size=5),
    tokens=st.lists(_token(), max_size=24),
)
def test_fuzz_decode_request_structured(target, client_id, tokens):
    api_key, version = target
    frame = codec.encode_request(api_key, version, 1, client_id, typed(api_key, True, {}))[4:]
    header_end = codec.decode_request_header(frame)[1]
    frame = frame[:header_end] + b"".join(tokens)
    try:
        codec.decode_request(frame)
    except ProtocolError:
        pass


@settings(max_examples=1000, deadline=None)
@given(st.binary(max_size=64))
def test_fuzz_decode_request_random_bytes(data):
    try:
        codec.decode_request(data)
    except ProtocolError:
        pass


def test_huge_declared_array_is_rejected_before_allocating():
    # Produce v3: transactional_id null, acks, timeout, then topic_data count 2**31-1.
    frame = struct.pack(">hhih", 0, 3, 1, -1) + struct.pack(">hhii", -1, 1, 1000, 0x7FFFFFFF)
    try:
        codec.decode_request(frame)
    except ProtocolError as exc:
        assert "overruns" in str(exc)
    else:
        raise AssertionError("accepted a 2**31-1 element array in a 22-byte frame")


def test_array_element_budget_counts_every_array():
    # Fetch v7: 2 topics x 3 partitions + 1 forgotten topic with 4 partition ints = 13 elements.
    partitions = [{"partition": i, "fetch_offset": 0} for i in range(3)]
    body = {
        "topics": [
            {"topic": "a", "partitions": partitions},
            {"topic": "b", "partitions": partitions},
        ],
        "forgotten_topics_data": [{"topic": "c", "partitions": [1, 2, 3, 4]}],
    }
    frame = codec.encode_request(1, 7, 1, None, body)[4:]
    assert codec.decode_request(frame, max_array_elements=13)[1]["topics"][1]["topic"] == "b"
    with pytest.raises(ProtocolError, match="too many array elements"):
        codec.decode_request(frame, max_array_elements=12)
    response = codec.encode_response(codec.RequestHeader(1, 7, 1, None), {"responses": [{}] * 3})
    with pytest.raises(ProtocolError, match="too many array elements"):
        codec.decode_response(1, 7, response.to_bytes()[4:], max_array_elements=2)


def test_default_element_budget_stops_a_cheap_many_element_request():
    # Metadata v4 with 2 bytes per topic: a 0.5 MB frame would decode to 250,001 dicts.
    count = codec.MAX_REQUEST_ARRAY_ELEMENTS + 1
    frame = struct.pack(">hhih", 3, 4, 1, -1) + struct.pack(">i", count) + b"\0\0" * count + b"\1"
    with pytest.raises(ProtocolError, match="too many array elements"):
        codec.decode_request(frame)
