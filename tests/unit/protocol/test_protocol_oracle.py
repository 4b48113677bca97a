"""Wire compatibility with an independent implementation: kafka-python 3.x.

Requests are encoded by kafka-python (header and body, as it sends them) and decoded by us;
our responses are decoded by kafka-python; the bodies must match field by field. kafka-python
builds its classes from the Apache Kafka 4.x schemas, which still describe the versions Kafka
4 removed (Produce 0-2, Fetch 0-3, ListOffsets 0, OffsetCommit 0-1, OffsetFetch 0,
CreateTopics 0-1, DeleteTopics 0, DescribeConfigs 0, OffsetForLeaderEpoch 0-1); for those
versions the hand-written classes of kafka-python's ``kafka.protocol.old`` package are a second
oracle (byte-for-byte equal encodings).
"""

from __future__ import annotations

import importlib
import pkgutil
import warnings
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from common.protocol import codec
from common.protocol.api_keys import ApiKey
from common.protocol.schemas import MESSAGES
from tests.unit.protocol import kafka_oracle
from tests.unit.protocol.bodies import body_strategy, normalise, sample_body, typed
from tests.unit.protocol.conftest import ORACLE_IDS, ORACLE_VERSIONS

ORACLE_SETTINGS = settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


def _response_body(api_key: int, version: int, body: dict) -> dict:
    if api_key == ApiKey.API_VERSIONS:
        # kafka-python (like Kafka's clients) reads any ApiVersions error response in the v0
        # format, so only error-free responses of v1+ round-trip through it.
        body = {**body, "error_code": 0}
    return body


@pytest.mark.parametrize(("api_key", "version"), ORACLE_VERSIONS, ids=ORACLE_IDS)
@ORACLE_SETTINGS
@given(data=st.data(), correlation_id=st.integers(-(2**31), 2**31 - 1))
def test_kafka_python_request_decodes(api_key: ApiKey, version: int, data, correlation_id):
    body = data.draw(body_strategy(MESSAGES[api_key][0], version))
    client_id = data.draw(st.none() | st.text(max_size=10))
    frame = kafka_oracle.encode_request(api_key, version, correlation_id, client_id, body)
    header, decoded = codec.decode_request(frame)
    assert header == codec.RequestHeader(api_key, version, correlation_id, client_id)
    expected = normalise(body)
    if api_key == ApiKey.METADATA and version == 0 and body["topics"] is None:
        expected["topics"] = []  # kafka-python sends "all topics" as [] in v0 (non-nullable)
    assert normalise(decoded) == normalise(typed(api_key, True, expected))


@pytest.mark.parametrize(("api_key", "version"), ORACLE_VERSIONS, ids=ORACLE_IDS)
@ORACLE_SETTINGS
@given(data=st.data(), correlation_id=st.integers(-(2**31), 2**31 - 1))
def test_our_response_decodes_in_kafka_python(api_key: ApiKey, version: int, data, correlation_id):
    fields = MESSAGES[api_key][1]
    body = _response_body(api_key, version, data.draw(body_strategy(fields, version)))
    header = codec.RequestHeader(api_key, version, correlation_id, "c")
    frame = codec.encode_response(header, typed(api_key, False, body)).to_bytes()
    got_correlation_id, obj = kafka_oracle.decode_response(api_key, version, frame[4:])
    assert got_correlation_id == correlation_id
    theirs = normalise(kafka_oracle.to_body(obj, fields, version))
    assert normalise(typed(api_key, False, theirs)) == normalise(typed(api_key, False, body))


@pytest.mark.parametrize(("api_key", "version"), ORACLE_VERSIONS, ids=ORACLE_IDS)
def test_our_request_matches_kafka_python_bytes(api_key: ApiKey, version: int):
    """The client direction: our request bytes equal kafka-python's for the same body."""
    body = sample_body(MESSAGES[api_key][0], version)
    if api_key == ApiKey.METADATA and version == 0:
        body["topics"] = body["topics"] or []
    ours = codec.encode_request(api_key, version, 7, "kraftlog", typed(api_key, True, body))
    theirs = kafka_oracle.encode_request(api_key, version, 7, "kraftlog", body)
    assert ours[4:] == theirs
    assert int.from_bytes(ours[:4], "big", signed=True) == len(theirs)


def _old_classes() -> dict[tuple[int, int, bool], Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import kafka.protocol.old as old_package

        classes = {}
        for info in pkgutil.iter_modules(old_package.__path__):
            module = importlib.import_module(f"kafka.protocol.old.{info.name}")
            for name in dir(module):
                cls = getattr(module, name)
                if isinstance(cls, type) and hasattr(cls, "API_KEY") and "_v" in name:
                    classes[(cls.API_KEY, cls.API_VERSION, "Request" in name)] = cls
    return classes


# Versions removed from the Apache Kafka 4 schemas (below their "validVersions").
REMOVED_VERSIONS = [
    (ApiKey.PRODUCE, 0), (ApiKey.PRODUCE, 1), (ApiKey.PRODUCE, 2),
    (ApiKey.FETCH, 0), (ApiKey.FETCH, 1), (ApiKey.FETCH, 2), (ApiKey.FETCH, 3),
    (ApiKey.LIST_OFFSETS, 0), (ApiKey.OFFSET_COMMIT, 0), (ApiKey.OFFSET_COMMIT, 1),
    (ApiKey.OFFSET_FETCH, 0), (ApiKey.CREATE_TOPICS, 0), (ApiKey.CREATE_TOPICS, 1),
    (ApiKey.DELETE_TOPICS, 0), (ApiKey.DESCRIBE_CONFIGS, 0),
    (ApiKey.OFFSET_FOR_LEADER_EPOCH, 0), (ApiKey.OFFSET_FOR_LEADER_EPOCH, 1),
]  # fmt: skip


def _positional(fields, version: int, body: dict) -> list:
    values = []
    for f in fields:
        if f.present_in(version):
            value = body[f.name]
            if isinstance(f.type, tuple) and value is not None:
                value = [tuple(_positional(f.type, version, item)) for item in value]
            values.append(value)
    return values


@pytest.mark.parametrize(
    ("api_key", "version"), REMOVED_VERSIONS, ids=[f"{a.name}-v{v}" for a, v in REMOVED_VERSIONS]
)
@pytest.mark.parametrize("is_request", [True, False], ids=["request", "response"])
def test_removed_versions_match_kafka_python_old_classes(api_key, version, is_request):
    old = _old_classes()[(api_key, version, is_request)]
    fields = MESSAGES[api_key][0 if is_request else 1]
    body = sample_body(fields, version)
    theirs = bytes(old(*_positional(fields, version, body)).encode())
    ours_body = typed(api_key, is_request, body)
    if is_request:
        frame = codec.encode_request(api_key, version, 1, None, ours_body)
        ours = frame[14:]  # size, api key, version, correlation id, null client id
        assert normalise(codec.decode_request(frame[4:14] + theirs)[1]) == normalise(ours_body)
    else:
        ours = codec.encode_response(codec.RequestHeader(api_key, version, 1, None), ours_body)
        ours = ours.to_bytes()[8:]
        assert normalise(codec.decode_response(api_key, version, b"\0\0\0\1" + theirs)[1]) == (
            normalise(ours_body)
        )
    assert ours == theirs
