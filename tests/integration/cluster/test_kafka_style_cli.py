"""Kafka tools' flags against a real cluster (1 controller, 1 broker): kafka-topics.sh,
kafka-console-producer.sh / -consumer.sh, kafka-consumer-groups.sh and kafka-configs.sh
invocations, spelled as operators type them, run through ``kraftlog``."""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from deploy.cli import main
from deploy.local_cluster import LocalCluster, wait_until
from tests.integration.clusters import running_cluster
from tests.integration.kafka_python_admin import kafka_python_admin

pytestmark = pytest.mark.integration

DEADLINE_S = 60.0


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    path: Path = tmp_path_factory.mktemp("kafka-style") / "cluster"
    with running_cluster(path, controllers=1, brokers=1) as started:
        yield started


@pytest.fixture(scope="module")
def brokers(cluster: LocalCluster) -> tuple[str, str]:
    return ("--bootstrap-server", ",".join(cluster.bootstrap_servers()))


@pytest.fixture(scope="module")
def controllers(cluster: LocalCluster) -> tuple[str, str]:
    return ("--bootstrap-controller", ",".join(cluster.bootstrap_controllers()))


class Cli:
    def __init__(self, capsys: pytest.CaptureFixture[str]) -> None:
        self.capsys = capsys

    def __call__(self, *argv: str) -> tuple[int, str, str]:
        self.capsys.readouterr()
        code = main(list(argv))
        out, err = self.capsys.readouterr()
        return code, out, err

    def ok(self, *argv: str) -> str:
        code, out, err = self(*argv)
        assert code == 0, (argv, out, err)
        return out

    def until(self, what: str, check: Callable[[str], bool], *argv: str) -> str:
        """Run ``argv`` until it succeeds and ``check(stdout)`` holds."""

        def attempt() -> list[str] | None:
            code, out, _err = self(*argv)
            # A list, so that an empty output that passes the check counts as done.
            return [out] if code == 0 and check(out) else None

        return wait_until(attempt, DEADLINE_S, what, interval_s=0.2)[0]


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Cli:
    return Cli(capsys)


def test_topics_create_list_describe_alter_delete(
    cli: Cli, brokers: tuple[str, str], controllers: tuple[str, str]
) -> None:
    out = cli.ok(
        "topics",
        "--create",
        "--topic",
        "orders",
        "--partitions",
        "3",
        "--replication-factor",
        "1",
        "--config",
        "retention.ms=86400000",
        *brokers,
    )
    assert "Created topic orders." in out
    assert "orders" in cli.ok("topics", "--list", *brokers).split()

    def described(partitions: int) -> Callable[[str], bool]:
        def check(out: str) -> bool:
            (topic,) = json.loads(out)
            return topic["partition_count"] == partitions and all(
                p["leader"] >= 0 for p in topic["partitions"]
            )

        return check

    out = cli.until(
        "3 partitions with leaders",
        described(3),
        "topics",
        "--describe",
        "--topic",
        "orders",
        "--json",
        *brokers,
    )
    assert json.loads(out)[0]["configs"] == {"retention.ms": "86400000"}
    text = cli.ok("topics", "--describe", "--topic", "orders", *brokers)
    assert "PartitionCount: 3" in text and "Configs: retention.ms=86400000" in text

    # Adding partitions: through the brokers (CreatePartitions), then the controllers.
    assert "Altered topic orders." in cli.ok(
        "topics", "--alter", "--topic", "orders", "--partitions", "4", *brokers
    )
    cli.until(
        "4 partitions with leaders",
        described(4),
        "topics",
        "--describe",
        "--topic",
        "orders",
        "--json",
        *brokers,
    )
    assert "Altered topic orders." in cli.ok(
        "topics", "--alter", "--topic", "orders", "--partitions", "6", *controllers
    )
    cli.until(
        "6 partitions with leaders",
        described(6),
        "topics",
        "--describe",
        "--topic",
        "orders",
        "--json",
        *brokers,
    )
    # The controllers' view of the same topic.
    (topic,) = json.loads(
        cli.ok("topics", "--describe", "--topic", "orders", "--json", *controllers)
    )
    assert topic["partition_count"] == 6

    assert "Deleted topic orders." in cli.ok("topics", "--delete", "--topic", "orders", *brokers)
    cli.until(
        "orders to disappear", lambda out: "orders" not in out.split(), "topics", "--list", *brokers
    )


def test_produce_keys_consume_with_a_group_then_groups_commands(
    cli: Cli, brokers: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    cli.ok(
        "topics",
        "--create",
        "--topic",
        "payments",
        "--partitions",
        "2",
        "--replication-factor",
        "1",
        *brokers,
    )
    lines = "".join(f"k{i}:value {i}\n" for i in range(6))
    monkeypatch.setattr(sys, "stdin", io.StringIO(lines))
    cli.ok(
        "produce",
        *brokers,
        "--topic",
        "payments",
        "--property",
        "parse.key=true",
        "--property",
        "key.separator=:",
        "--producer-property",
        "acks=all",
    )

    code, out, err = cli(
        "consume",
        *brokers,
        "--topic",
        "payments",
        "--from-beginning",
        "--group",
        "billing",
        "--property",
        "print.key=true",
        "--property",
        "key.separator=:",
        "--consumer-property",
        "isolation.level=read_committed",
        "--max-messages",
        "6",
        "--timeout-ms",
        "60000",
    )
    assert code == 0 and "Processed a total of 6 messages" in err
    assert sorted(out.splitlines()) == [f"k{i}:value {i}" for i in range(6)]

    cli.until(
        "the group to be listed", lambda out: "billing" in out.split(), "groups", "--list", *brokers
    )

    def committed(total: int) -> Callable[[str], bool]:
        def check(out: str) -> bool:
            doc = json.loads(out)
            return sum(r["current_offset"] or 0 for r in doc["partitions"]) == total

        return check

    cli.until(
        "6 committed offsets",
        committed(6),
        "groups",
        "--describe",
        "--group",
        "billing",
        "--json",
        *brokers,
    )
    text = cli.ok("groups", "--describe", "--group", "billing", *brokers)
    assert text.splitlines()[-1].split()[:2] == ["billing", "payments"]

    # The consumer has left: the group is empty, so a reset may be executed.
    cli.until(
        "the reset to be executed",
        lambda out: "dry run" not in out,
        "groups",
        "--reset-offsets",
        "--group",
        "billing",
        "--topic",
        "payments",
        "--to-earliest",
        "--execute",
        *brokers,
    )
    cli.until(
        "offsets back to 0",
        committed(0),
        "groups",
        "--describe",
        "--group",
        "billing",
        "--json",
        *brokers,
    )

    assert "successful" in cli.ok("groups", "--delete", "--group", "billing", *brokers)
    cli.until(
        "the group to be gone",
        lambda out: "billing" not in out.split(),
        "groups",
        "--list",
        *brokers,
    )


def test_configs_alter_then_describe(
    cli: Cli, cluster: LocalCluster, brokers: tuple[str, str], controllers: tuple[str, str]
) -> None:
    cli.ok(
        "topics",
        "--create",
        "--topic",
        "audit",
        "--partitions",
        "1",
        "--replication-factor",
        "1",
        *brokers,
    )
    topic = ("--entity-type", "topics", "--entity-name", "audit")

    # Through a broker (IncrementalAlterConfigs), then the controllers.
    cli.ok("configs", "--alter", *topic, "--add-config", "retention.ms=5", *brokers)
    cli.until(
        "retention.ms=5 through the broker",
        lambda out: out.splitlines()[1:] == ["  retention.ms=5"],
        "configs",
        "--describe",
        *topic,
        *brokers,
    )
    cli.ok(
        "configs",
        "--alter",
        *topic,
        "--add-config",
        "retention.ms=1000,cleanup.policy=[compact,delete]",
        *controllers,
    )

    expected = ["  cleanup.policy=compact,delete", "  retention.ms=1000"]
    out = cli.until(
        "the new configs through the broker",
        lambda out: out.splitlines()[1:] == expected,
        "configs",
        "--describe",
        *topic,
        *brokers,
    )
    assert out.splitlines()[0] == "Dynamic configs for topic audit are:"
    assert cli.ok("configs", "--describe", *topic, *controllers).splitlines()[1:] == expected
    every = json.loads(cli.ok("configs", "--describe", *topic, "--all", "--json", *brokers))
    assert every["configs"]["retention.ms"] == "1000" and len(every["configs"]) > 2

    cli.ok(
        "configs", "--alter", "--topic", "audit", "--delete-config", "cleanup.policy", *controllers
    )
    cli.until(
        "cleanup.policy removed",
        lambda out: out.splitlines()[1:] == expected[1:],
        "configs",
        "--describe",
        *topic,
        *brokers,
    )

    broker_id = str(cluster.broker_ids[0])
    out = cli.ok(
        "configs", "--describe", "--entity-type", "brokers", "--entity-name", broker_id, *brokers
    )
    title, *entries = out.splitlines()
    assert title == f"Static configs for broker {broker_id} are:"
    assert entries and all(line.startswith("  ") and "=" in line for line in entries)
    code, _, err = cli("configs", "--describe", "--broker", broker_id, *controllers)
    assert code == 2 and "--bootstrap-server" in err


def test_real_clients_alter_configs(cli: Cli, cluster: LocalCluster, brokers: tuple[str, str]):
    """kafka-python's admin (AlterConfigs: the whole set of overrides) and confluent-kafka's
    incremental_alter_configs (IncrementalAlterConfigs) against the broker."""
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource

    cli.ok(
        "topics",
        "--create",
        "--topic",
        "tuned",
        "--partitions",
        "1",
        "--replication-factor",
        "1",
        *brokers,
    )
    topic = ("--entity-type", "topics", "--entity-name", "tuned")
    with kafka_python_admin(cluster.bootstrap_servers()) as kp:
        from kafka.admin import ConfigResource as KpResource
        from kafka.admin import ConfigResourceType

        kp.alter_configs(
            [KpResource(ConfigResourceType.TOPIC, "tuned", configs={"retention.ms": "7000"})]
        )
    cli.until(
        "kafka-python's change",
        lambda out: out.splitlines()[1:] == ["  retention.ms=7000"],
        "configs",
        "--describe",
        *topic,
        *brokers,
    )
    admin = AdminClient({"bootstrap.servers": ",".join(cluster.bootstrap_servers())})
    resource = ConfigResource(
        ConfigResource.Type.TOPIC,
        "tuned",
        incremental_configs=[
            ConfigEntry("max.message.bytes", "65536", incremental_operation=AlterConfigOpType.SET),
            ConfigEntry("retention.ms", None, incremental_operation=AlterConfigOpType.DELETE),
        ],
    )
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(DEADLINE_S)
    cli.until(
        "confluent-kafka's change",
        lambda out: out.splitlines()[1:] == ["  max.message.bytes=65536"],
        "configs",
        "--describe",
        *topic,
        *brokers,
    )
    # A broker's configs are static: refused with INVALID_REQUEST, the broker keeps serving.
    broker = ConfigResource(
        ConfigResource.Type.BROKER,
        str(cluster.broker_ids[0]),
        incremental_configs=[
            ConfigEntry("log.retention.ms", "1", incremental_operation=AlterConfigOpType.SET)
        ],
    )
    (future,) = admin.incremental_alter_configs([broker]).values()
    with pytest.raises(Exception, match="static"):
        future.result(DEADLINE_S)
