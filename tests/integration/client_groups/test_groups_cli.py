"""``kraftlog groups`` against a real broker: describe shows lag per partition going to 0,
reset-offsets is refused while members are active, and --to-earliest --execute makes the group
read everything again."""

from __future__ import annotations

import json
import time
from collections.abc import Callable

import pytest

from deploy.cli import main
from kraftlog_client import Admin, Consumer, KafkaError, TopicPartition
from tests.integration.client_groups.conftest import MEMBER

pytestmark = pytest.mark.integration

DEADLINE_S = 60.0


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def read(consumer: Consumer, count: int) -> list:
    records: list = []
    deadline = time.monotonic() + DEADLINE_S
    while len(records) < count:
        assert time.monotonic() < deadline, f"read {len(records)} of {count}"
        records += consumer.poll(100)
    return records


def test_describe_lag_and_reset_offsets(
    bootstrap: str,
    admin: Admin,
    new_topic: Callable[..., str],
    group_id: str,
    produce: Callable[..., list[bytes]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    topic = new_topic(2)
    produce(topic, 40, 2)
    where = ("--bootstrap-server", bootstrap)
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group_id,
            "client.id": "cli-test",
            "enable.auto.commit": "false",
            **MEMBER,
        }
    )
    try:
        consumer.subscribe([topic])
        read(consumer, 40)
        consumer.commit({TopicPartition(topic, 0): 5, TopicPartition(topic, 1): 20})

        code, out, _ = cli(capsys, "groups", "describe", group_id, *where, "--json")
        assert code == 0
        rows = {r["partition"]: r for r in json.loads(out)["partitions"]}
        assert (rows[0]["current_offset"], rows[0]["log_end_offset"], rows[0]["lag"]) == (5, 20, 15)
        assert rows[1]["lag"] == 0
        member_id = consumer.group_generation()[1]
        assert {r["consumer_id"] for r in rows.values()} == {member_id}
        assert {r["client_id"] for r in rows.values()} == {"cli-test"}

        code, out, _ = cli(capsys, "groups", "describe", group_id, *where)
        header, *lines = out.strip().splitlines()
        assert header.split() == [
            "GROUP",
            "TOPIC",
            "PARTITION",
            "CURRENT-OFFSET",
            "LOG-END-OFFSET",
            "LAG",
            "CONSUMER-ID",
            "HOST",
            "CLIENT-ID",
        ]
        assert [line.split()[3:6] for line in lines] == [["5", "20", "15"], ["20", "20", "0"]]
        assert {line.split()[7] for line in lines} == {"/127.0.0.1"}  # the member's address

        code, out, _ = cli(capsys, "groups", "list", *where)
        assert code == 0 and group_id in out.split()

        # An active member would overwrite a reset: refused.
        code, _, err = cli(
            capsys,
            "groups",
            "reset-offsets",
            group_id,
            "--all-topics",
            "--to-earliest",
            "--execute",
            *where,
        )
        assert code == 1 and "inactive" in err
        with pytest.raises(KafkaError, match="NON_EMPTY_GROUP"):
            admin.alter_consumer_group_offsets(group_id, {TopicPartition(topic, 0): 0})
        described = admin.describe_groups([group_id])[group_id]
        assert described.state == "Stable"
        assert [m.client_host for m in described.members] == ["/127.0.0.1"]

        consumer.commit()  # everything read: lag goes to 0
        code, out, _ = cli(capsys, "groups", "describe", group_id, *where, "--json")
        assert [r["lag"] for r in json.loads(out)["partitions"]] == [0, 0]
    finally:
        consumer.close()

    code, out, _ = cli(
        capsys, "groups", "reset-offsets", group_id, "--topic", topic, "--to-earliest", *where
    )
    assert code == 0 and "dry run" in out
    assert admin.list_consumer_group_offsets(group_id) == {
        TopicPartition(topic, 0): 20,
        TopicPartition(topic, 1): 20,
    }
    code, out, _ = cli(
        capsys,
        "groups",
        "reset-offsets",
        group_id,
        "--topic",
        f"{topic}:1",
        "--shift-by",
        "-3",
        "--execute",
        *where,
    )
    assert code == 0
    assert admin.list_consumer_group_offsets(group_id)[TopicPartition(topic, 1)] == 17
    code, out, _ = cli(
        capsys,
        "groups",
        "reset-offsets",
        group_id,
        "--all-topics",
        "--to-earliest",
        "--execute",
        *where,
    )
    assert code == 0
    assert admin.list_consumer_group_offsets(group_id) == {
        TopicPartition(topic, 0): 0,
        TopicPartition(topic, 1): 0,
    }

    again = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group_id,
            **MEMBER,
            "auto.offset.reset": "latest",
        }
    )
    try:
        again.subscribe([topic])
        records = read(again, 40)  # from the reset committed offsets, not "latest"
        assert sorted(r.offset for r in records if r.partition == 0) == list(range(20))
    finally:
        again.close()

    # Empty again: DeleteGroups removes the group and its committed offsets.
    assert admin.describe_groups([group_id])[group_id].state == "Empty"
    admin.delete_groups([group_id])
    assert group_id not in {g.group_id for g in admin.list_groups()}
    assert admin.list_consumer_group_offsets(group_id) == {}
    with pytest.raises(KafkaError):
        admin.delete_groups([group_id])  # GROUP_ID_NOT_FOUND now


def test_console_consumer_with_a_group_commits_and_resumes(
    bootstrap: str,
    admin: Admin,
    new_topic: Callable[..., str],
    group_id: str,
    produce: Callable[..., list[bytes]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    topic = new_topic(2)
    first = produce(topic, 10, 2)
    where = ("--bootstrap-server", bootstrap, "--topic", topic, "--group", group_id)
    code, out, _ = cli(
        capsys,
        "consume",
        *where,
        "--from-beginning",
        "--max-messages",
        "10",
        *(f"--consumer-property={k}={v}" for k, v in MEMBER.items()),
    )
    assert code == 0 and sorted(out.split()) == sorted(v.decode() for v in first)
    # Closing committed the group's position: a second run starts there, not at the beginning.
    assert admin.list_consumer_group_offsets(group_id) == {
        TopicPartition(topic, 0): 5,
        TopicPartition(topic, 1): 5,
    }
    more = produce(topic, 4, 2, start=10)
    code, out, _ = cli(
        capsys,
        "consume",
        *where,
        "--from-beginning",
        "--max-messages",
        "4",
        *(f"--consumer-property={k}={v}" for k, v in MEMBER.items()),
    )
    assert code == 0 and sorted(out.split()) == sorted(v.decode() for v in more)
    code, _, err = cli(capsys, "consume", *where, "--partition", "0")
    assert code == 1 and "--partition" in err
