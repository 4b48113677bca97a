from __future__ import annotations

import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from common.configdef import from_props
from metadata.controller_config import ControllerConfig
from metadata.messages import (
    AlterPartitionItem,
    AlterPartitionRequest,
    AlterPartitionTopic,
    CreateTopicsRequest,
    FetchMetadataResponse,
    NewTopic,
)
from metadata.rpc import METHODS, decode_request, pack, unpack
from metadata.wire import MessageError, from_wire, to_wire


def test_roundtrip_nested_messages() -> None:
    req = CreateTopicsRequest(
        [NewTopic("a", 3, 2, None, {"retention.ms": "1"}), NewTopic("b", -1, -1, {0: [1, 2]})]
    )
    assert decode_request(CreateTopicsRequest, pack(req)) == req
    tid = uuid.uuid4()
    ap = AlterPartitionRequest(
        1, 5, [AlterPartitionTopic("t", [AlterPartitionItem(0, 1, [1], 2)], tid)]
    )
    assert decode_request(AlterPartitionRequest, pack(ap)) == ap
    fm = FetchMetadataResponse(b"snap", 4, 1, [(5, 1, b"r", False)], 5)
    assert from_wire(FetchMetadataResponse, unpack(pack(fm))) == fm


@pytest.mark.parametrize(
    "obj",
    [
        [],
        {"topics": "x"},
        {"topics": [{"name": 5}]},
        {"topics": [{"name": "a", "num_partitions": True}]},
        {"topics": [{"name": "a", "replica_assignment": {"0": [1]}}]},
        {"topics": [{"num_partitions": 1}]},
    ],
)
def test_schema_violations(obj: object) -> None:
    with pytest.raises(MessageError):
        from_wire(CreateTopicsRequest, obj)


def test_nesting_is_bounded() -> None:
    deep: object = {"name": "a"}
    for _ in range(100):
        deep = [deep]
    with pytest.raises(MessageError):
        from_wire(CreateTopicsRequest, {"topics": deep})


@given(
    st.recursive(
        st.none() | st.integers() | st.text() | st.binary() | st.booleans(),
        lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner),
        max_leaves=20,
    )
)
def test_random_structures_never_escape_as_other_errors(obj: object) -> None:
    for request_cls, _, _ in METHODS.values():
        try:
            from_wire(request_cls, obj)
        except MessageError:
            pass


def test_to_wire_converts_uuids_and_tuples() -> None:
    tid = uuid.UUID(int=7, version=4)
    assert to_wire((tid, (1, 2))) == [tid.bytes, [1, 2]]


def test_controller_config_from_properties() -> None:
    cfg = from_props(
        ControllerConfig,
        {"broker.session.timeout.ms": "1500", "unclean.leader.election.enable": "true"},
    )
    assert cfg.broker_session_timeout_ms == 1500 and cfg.unclean_leader_election_enable
