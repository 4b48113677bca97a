"""Topic ids on the wire (KIP-516), over real sockets: Metadata v10-12 answers ids and looks
topics up by id, Fetch v13+ reads by id (sessions included) and never serves a re-created
topic to a fetcher holding the old id, DeleteTopics v6 names topics by id."""

from __future__ import annotations

import uuid

import pytest

from common.error_codes import ErrorCode
from common.protocol.api_keys import ApiKey
from common.protocol.fetch_replica import fetch_replica_id
from common.protocol.messages.delete_topics import DeleteTopicsRequest, DeleteTopicsRequestTopic
from tests.unit.broker.harness import BrokerHarness
from tests.unit.broker.test_server_wire import batch, fetch_body, presult, produce_body
from tests.unit.broker.wire import WireClient

ZERO = bytes(16)


def topic_id(broker: BrokerHarness, name: str) -> bytes:
    return broker.apis.replica_manager.image.topic(name).topic_id.bytes


def by_id(body: dict, ids: dict[str, bytes]) -> dict:
    """A fetch body (of test_server_wire.fetch_body) naming its topics by id."""
    for t in body["topics"]:
        t["topic_id"] = ids[t.pop("topic")]
    return body


def recreate(broker: BrokerHarness, name: str, partitions: int = 2) -> None:
    broker.set_topics({})
    broker.set_topics({name: partitions})


def test_metadata_answers_topic_ids_and_looks_topics_up_by_id(
    broker: BrokerHarness, client: WireClient
) -> None:
    tid = topic_id(broker, "t")
    m = client.call(ApiKey.METADATA, 10, {"topics": [{"name": "t"}]})
    assert m["topics"][0]["topic_id"] == tid
    unknown = uuid.uuid4().bytes
    m = client.call(
        ApiKey.METADATA,
        12,
        {"topics": [{"topic_id": tid, "name": None}, {"topic_id": unknown, "name": None}]},
    )
    found, missing = m["topics"]
    assert (found["name"], found["topic_id"], found["error_code"]) == ("t", tid, 0)
    assert [p["partition_index"] for p in found["partitions"]] == [0, 1]
    assert (missing["name"], missing["topic_id"]) == (None, unknown)
    assert missing["error_code"] == ErrorCode.UNKNOWN_TOPIC_ID
    nameless = client.call(ApiKey.METADATA, 12, {"topics": [{"topic_id": ZERO, "name": None}]})
    assert nameless["topics"][0]["error_code"] == ErrorCode.INVALID_TOPIC_EXCEPTION
    # All topics, v11: ids for each, and no cluster authorized operations any more.
    everything = client.call(ApiKey.METADATA, 11, {"topics": None})
    assert [(t["name"], t["topic_id"]) for t in everything["topics"]] == [("t", tid)]
    assert "cluster_authorized_operations" not in everything


@pytest.mark.parametrize("version", [13, 15, 16, 17])
def test_fetch_by_topic_id(broker: BrokerHarness, client: WireClient, version: int) -> None:
    sent = batch(3)
    assert presult(client.call(ApiKey.PRODUCE, 9, produce_body("t", 0, sent)))["error_code"] == 0
    tid = topic_id(broker, "t")
    unknown = uuid.uuid4().bytes
    body = by_id(fetch_body([("t", 0, 0), ("u", 0, 0)]), {"t": tid, "u": unknown})
    f = client.call(ApiKey.FETCH, version, body)
    answered = {t["topic_id"]: t["partitions"] for t in f["responses"]}
    (t0,) = answered[tid]
    assert t0["error_code"] == 0 and t0["high_watermark"] == 3
    assert bytes(t0["records"])[16:] == sent[16:]
    (u0,) = answered[unknown]
    assert u0["error_code"] == ErrorCode.UNKNOWN_TOPIC_ID


def test_a_fetcher_holding_a_deleted_topics_id_never_reads_its_successor(
    broker: BrokerHarness, client: WireClient
) -> None:
    """A session opened by id, then the topic deleted and re-created under the same name:
    the session's partitions answer UNKNOWN_TOPIC_ID, as does a full fetch with the old id;
    the new id reads the new topic, and forgetting the dead id empties the session."""
    old = topic_id(broker, "t")
    opening = by_id(fetch_body([("t", 0, 0), ("t", 1, 0)]), {"t": old})
    opening["session_epoch"] = 0
    f = client.call(ApiKey.FETCH, 13, opening)
    sid = f["session_id"]
    assert sid != 0 and [t["topic_id"] for t in f["responses"]] == [old]

    recreate(broker, "t")
    new = topic_id(broker, "t")
    assert new != old
    assert (
        presult(client.call(ApiKey.PRODUCE, 9, produce_body("t", 0, batch(2))))["error_code"] == 0
    )

    incremental = fetch_body([])
    incremental["session_id"], incremental["session_epoch"] = sid, 1
    f = client.call(ApiKey.FETCH, 13, incremental)
    parts = [
        (t["topic_id"], p["error_code"], len(p["records"] or b""))
        for t in f["responses"]
        for p in t["partitions"]
    ]
    assert sorted(parts, key=lambda x: x[1]) == [
        (old, ErrorCode.UNKNOWN_TOPIC_ID, 0),
        (old, ErrorCode.UNKNOWN_TOPIC_ID, 0),
    ]
    stale = by_id(fetch_body([("t", 0, 0)]), {"t": old})
    (p,) = client.call(ApiKey.FETCH, 13, stale)["responses"][0]["partitions"]
    assert p["error_code"] == ErrorCode.UNKNOWN_TOPIC_ID and not p["records"]
    fresh = by_id(fetch_body([("t", 0, 0)]), {"t": new})
    (p,) = client.call(ApiKey.FETCH, 13, fresh)["responses"][0]["partitions"]
    assert p["error_code"] == 0 and p["high_watermark"] == 2

    forget = fetch_body([])
    forget["session_id"], forget["session_epoch"] = sid, 2
    forget["forgotten_topics_data"] = [{"topic_id": old, "partitions": [0, 1]}]
    client.call(ApiKey.FETCH, 13, forget)
    assert broker.apis.fetch_sessions.get(sid).partitions == {}


def test_the_fetching_replica_is_in_replica_state_from_v15() -> None:
    assert fetch_replica_id(14, {"replica_id": 3}) == 3
    assert fetch_replica_id(15, {"replica_state": {"replica_id": 3, "replica_epoch": 9}}) == 3
    assert fetch_replica_id(15, {"replica_state": None}) == -1  # a consumer sends none
    assert fetch_replica_id(15, {"replica_id": 3}) == -1  # not a v15 field


def test_delete_topics_by_id_without_a_known_id(broker: BrokerHarness, client: WireClient) -> None:
    unknown = uuid.uuid4().bytes
    d = client.call(
        ApiKey.DELETE_TOPICS,
        6,
        DeleteTopicsRequest(
            topics=[
                DeleteTopicsRequestTopic(name=None, topic_id=unknown),
                DeleteTopicsRequestTopic(name=None, topic_id=ZERO),
            ],
            timeout_ms=1000,
        ),
    )
    codes = [(r.name, r.topic_id, r.error_code) for r in d.responses]
    assert codes == [
        (None, unknown, ErrorCode.UNKNOWN_TOPIC_ID),
        (None, ZERO, ErrorCode.INVALID_REQUEST),
    ]
