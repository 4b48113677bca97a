"""Typed message classes: the committed modules are what the generator writes, and for every
(api, version) the typed codec (classes in, classes out) gives the same bytes, the same
values and the same errors as the dict codec, valid and hostile inputs alike.

The two codecs are compiled here directly from the schema tables, for every API whether or
not ``codec.TYPED_APIS`` already lists it, so an API is proven before it is converted.
"""

from __future__ import annotations

import dataclasses
import functools
import random
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from common.protocol import codec, generate
from common.protocol.api_keys import ApiKey
from common.protocol.compiler import CompiledMessage, compile_message
from common.protocol.errors import ProtocolError
from common.protocol.message_names import struct_classes
from common.protocol.schemas import MESSAGES, is_flexible
from tests.unit.protocol.bodies import (
    body_strategy,
    from_dict,
    message_class,
    normalise,
    sample_body,
)
from tests.unit.protocol.conftest import ALL_IDS, ALL_VERSIONS
from tests.unit.protocol.test_protocol_fuzz import _mutate

SAME = settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def test_committed_messages_are_what_the_generator_writes():
    stale = generate.stale_files()
    assert not stale, (
        f"stale generated modules {[p.name for p in stale]}: "
        "run `python -m common.protocol.generate`"
    )


@pytest.mark.parametrize("api_key", sorted(MESSAGES), ids=lambda k: ApiKey(k).name)
@pytest.mark.parametrize("is_request", [True, False], ids=["request", "response"])
def test_class_fields_are_the_table_fields_in_wire_order(api_key, is_request):
    fields = MESSAGES[api_key][0 if is_request else 1]
    cls = message_class(api_key, is_request)
    assert [f.name for f in dataclasses.fields(cls)] == [f.name for f in fields]
    assert not hasattr(cls(), "__dict__")  # slotted


@functools.cache
def _codecs(api_key: int, version: int, is_request: bool) -> tuple[CompiledMessage, ...]:
    key = ApiKey(api_key)
    fields = MESSAGES[key][0 if is_request else 1]
    flexible = is_flexible(key, version)
    classes = struct_classes(key, is_request, fields)
    return (
        compile_message(fields, version, "dict", flexible),
        compile_message(fields, version, "typed", flexible, classes),
    )


def _encode(compiled: CompiledMessage, body) -> bytes:
    out = bytearray()
    cuts: list = []
    compiled.encode(out, body, cuts)
    assert not cuts
    return bytes(out)


def _decode(compiled: CompiledMessage, data: bytes):
    """The decoded body, or the exception (type and text) the decoder raised."""
    try:
        body, end = compiled.decode(memoryview(data), 0, 1000)
    except (ProtocolError, struct.error, IndexError, UnicodeDecodeError) as exc:
        return type(exc), str(exc)
    return normalise(body), end


@pytest.mark.parametrize(("api_key", "version"), ALL_VERSIONS, ids=ALL_IDS)
@pytest.mark.parametrize("is_request", [True, False], ids=["request", "response"])
@SAME
@given(data=st.data())
def test_typed_codec_matches_the_dict_codec(api_key, version, is_request, data):
    plain, typed = _codecs(api_key, version, is_request)
    fields = MESSAGES[api_key][0 if is_request else 1]
    body = data.draw(body_strategy(fields, version))
    instance = from_dict(message_class(api_key, is_request), body)
    wire = _encode(plain, body)
    assert _encode(typed, instance) == wire
    decoded, end = typed.decode(memoryview(wire), 0, 1000)
    assert end == len(wire)
    assert isinstance(decoded, message_class(api_key, is_request))
    assert normalise(decoded) == normalise(instance)
    # Fields the version lacks decode as the class defaults.
    assert normalise(from_dict(type(decoded), plain.decode(memoryview(wire), 0, 1000)[0])) == (
        normalise(decoded)
    )


@pytest.mark.parametrize(("api_key", "version"), ALL_VERSIONS, ids=ALL_IDS)
def test_typed_decoder_fails_like_the_dict_decoder_on_hostile_bytes(api_key, version):
    rng = random.Random(api_key * 1000 + version)
    for is_request in (True, False):
        plain, typed = _codecs(api_key, version, is_request)
        fields = MESSAGES[api_key][0 if is_request else 1]
        corpus = [_encode(plain, sample_body(fields, version)), _encode(plain, {})]
        for _ in range(60):
            data = _mutate(rng, rng.choice(corpus), corpus)
            expected = _decode(plain, data)
            got = _decode(typed, data)
            if isinstance(expected[0], type):
                assert got == expected
            else:
                cls = message_class(api_key, is_request)
                assert got[0] == normalise(
                    from_dict(cls, plain.decode(memoryview(data), 0, 1000)[0])
                )
                assert got[1] == expected[1]


def test_typed_encoder_rejects_a_dict_and_a_wrong_value():
    _plain, typed = _codecs(ApiKey.FIND_COORDINATOR, 4, True)
    with pytest.raises(AttributeError):
        _encode(typed, {"key_type": 0})
    request = message_class(ApiKey.FIND_COORDINATOR, True)(key_type=300)
    with pytest.raises(struct.error):
        _encode(typed, request)


def test_typed_apis_have_classes():
    for api_key in codec.TYPED_APIS:
        assert message_class(api_key, True).__name__.endswith("Request")
