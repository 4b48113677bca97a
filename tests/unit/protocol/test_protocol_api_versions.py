"""ApiVersions probes and answers to unsupported API keys / versions."""

from __future__ import annotations

import struct
import warnings

from common.error_codes import ErrorCode
from common.protocol import codec
from common.protocol.api_keys import SUPPORTED_VERSIONS, ApiKey
from common.protocol.codec import RequestHeader, UnsupportedVersionError
from common.protocol.messages.api_versions import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    ApiVersionsResponseApiKey,
    ApiVersionsResponseSupportedFeature,
)
from tests.unit.protocol import kafka_oracle


def _compact_string(value: str) -> bytes:
    data = value.encode()
    return bytes([len(data) + 1]) + data  # unsigned varint of length + 1 (< 128 here)


def librdkafka_probe(correlation_id: int) -> bytes:
    """ApiVersions v3 as librdkafka sends it: request header v2 (v1 + empty tagged fields),
    body: compact client software name and version, empty tagged fields."""
    header = struct.pack(">hhih", 18, 3, correlation_id, 7) + b"rdkafka" + b"\x00"
    body = _compact_string("librdkafka") + _compact_string("2.16.0") + b"\x00"
    return header + body


def kafka_python_probe(correlation_id: int) -> bytes:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from kafka.protocol.metadata import ApiVersionsRequest
    request = ApiVersionsRequest[4](
        client_software_name="kafka-python", client_software_version="3.0.12"
    )
    request.with_header(correlation_id=correlation_id, client_id="kafka-python-3.0.12")
    return bytes(request.encode(header=True))


def test_librdkafka_v3_probe_is_answered_in_kind():
    header, body = codec.decode_request(librdkafka_probe(1234))
    assert header == RequestHeader(ApiKey.API_VERSIONS, 3, 1234, "rdkafka")
    assert body == ApiVersionsRequest("librdkafka", "2.16.0")
    response = codec.encode_response(
        header, ApiVersionsResponse(error_code=0, api_keys=codec.api_versions_entries())
    ).to_bytes()
    # Response header v0 even in a flexible version, then the compact body.
    assert struct.unpack_from(">i", response, 4)[0] == 1234
    _, decoded = codec.decode_response(ApiKey.API_VERSIONS, 3, response[4:])
    assert decoded.api_keys == codec.api_versions_entries()
    assert decoded.finalized_features_epoch == -1 and decoded.supported_features == []


def test_kafka_python_v4_probe_is_answered_in_kind():
    header, body = codec.decode_request(kafka_python_probe(-5))
    assert (header.api_version, header.correlation_id) == (4, -5)
    assert body.client_software_name == "kafka-python"
    features = [ApiVersionsResponseSupportedFeature("metadata.version", 1, 1)]
    response = codec.encode_response(
        header,
        ApiVersionsResponse(
            error_code=0, api_keys=codec.api_versions_entries(), supported_features=features
        ),
    ).to_bytes()
    _, obj = kafka_oracle.decode_response(ApiKey.API_VERSIONS, 4, response[4:])
    assert obj.error_code == 0
    assert {k.api_key: k.max_version for k in obj.api_keys}[18] == 4


def newer_probe(correlation_id: int) -> bytes:
    """ApiVersions v5 (a version this codec does not know), flexible header and body."""
    header = struct.pack(">hhih", 18, 5, correlation_id, 3) + b"cli" + b"\x00"
    return header + _compact_string("future") + _compact_string("9.9") + b"\x00"


def test_newer_probe_gets_v0_fallback():
    correlation_id = 77
    try:
        codec.decode_request(newer_probe(correlation_id))
    except UnsupportedVersionError as exc:
        header = exc.header
    else:
        raise AssertionError("ApiVersions v5 was accepted")
    assert header.api_key == ApiKey.API_VERSIONS and header.correlation_id == correlation_id
    response = codec.unsupported_version_response(header).to_bytes()
    size, got_correlation_id, error_code = struct.unpack_from(">iih", response)
    assert size == len(response) - 4
    assert (got_correlation_id, error_code) == (correlation_id, 35)
    # The body is the v0 format after a v0 header, whatever version was asked.
    _, body = codec.decode_response(ApiKey.API_VERSIONS, 0, response[4:])
    assert body == ApiVersionsResponse(error_code=35, api_keys=codec.api_versions_entries())
    assert {e.api_key: (e.min_version, e.max_version) for e in body.api_keys} == {
        int(k): v for k, v in SUPPORTED_VERSIONS.items()
    }
    # A client reads it as the v0 fallback and retries with our highest version.
    _, obj = kafka_oracle.decode_response(ApiKey.API_VERSIONS, 3, response[4:])
    assert obj.error_code == 35
    assert {k.api_key: k.max_version for k in obj.api_keys}[18] == 4


def test_fallback_lists_the_brokers_filtered_apis():
    header = RequestHeader(18, 4, 9, "x")
    only = {ApiKey.API_VERSIONS: (0, 2), ApiKey.METADATA: (0, 8)}
    response = codec.unsupported_version_response(header, only).to_bytes()
    _, body = codec.decode_response(18, 3 - 1, response[4:])  # client asked v2, got error 35
    assert body.api_keys == [
        ApiVersionsResponseApiKey(api_key=3, min_version=0, max_version=8),
        ApiVersionsResponseApiKey(api_key=18, min_version=0, max_version=2),
    ]


def test_supported_api_versions_answer_round_trips():
    for version in range(5):
        frame = codec.encode_request(18, version, 3, "c", ApiVersionsRequest("c", "1"))
        header, _body = codec.decode_request(frame[4:])
        assert header == RequestHeader(18, version, 3, "c")
        response = codec.encode_response(
            header, ApiVersionsResponse(error_code=0, api_keys=codec.api_versions_entries())
        )
        _, decoded = codec.decode_response(18, version, response.to_bytes()[4:])
        assert decoded.api_keys == codec.api_versions_entries()


def _expect_bare_unsupported(frame: bytes, api_key: int, version: int) -> None:
    try:
        codec.decode_request(frame)
    except UnsupportedVersionError as exc:
        assert exc.error_code == ErrorCode.UNSUPPORTED_VERSION
        assert exc.header == RequestHeader(api_key, version, 42, "cli")
        response = codec.unsupported_version_response(exc.header)
    else:
        raise AssertionError("accepted")
    assert response.to_bytes() == struct.pack(">iih", 6, 42, 35)
    assert response.total_length == 10


def test_unknown_api_key_gets_unsupported_version():
    frame = struct.pack(">hhih", 999, 0, 42, 3) + b"cli" + b"\x00\x01\x02"
    _expect_bare_unsupported(frame, 999, 0)


def test_produce_v99_gets_unsupported_version():
    frame = struct.pack(">hhih", 0, 99, 42, 3) + b"cli" + b"\xff\xff\x00\x01"
    _expect_bare_unsupported(frame, 0, 99)


def test_produce_above_the_highest_version_is_unsupported():
    frame = struct.pack(">hhih", 0, 12, 42, 3) + b"cli" + b"\x00\x00\x01"
    _expect_bare_unsupported(frame, 0, 12)
