"""The Kafka tools' flags on ``kraftlog``: each Kafka-style invocation parses into the same
arguments as the subcommand form it stands for, and contradictions are usage errors (exit 2).
Parsing only: nothing here connects to a cluster."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

import pytest

from deploy import cmd_configs, cmd_consume, cmd_produce
from deploy.cli import build_parser, main
from kraftlog_client import ConsumerRecord


def parse(*argv: str) -> argparse.Namespace:
    return build_parser(argv).parse_args(list(argv))


def resolved(*argv: str) -> argparse.Namespace:
    """The subcommand arguments a Kafka-style command line stands for."""
    args = parse(*argv)
    sub = args.kafka_style.resolve(args)
    assert sub is not None
    return sub


def same_as(kafka: Sequence[str], native: Sequence[str], *keys: str) -> None:
    a, b = resolved(*kafka), parse(*native)
    for key in keys:
        assert getattr(a, key) == getattr(b, key), key


def usage_exit(*argv: str) -> None:
    """Run ``argv`` expecting a usage error (argparse exits with status 2)."""
    with pytest.raises(SystemExit) as raised:
        args = parse(*argv)
        args.func(args)
    assert raised.value.code == 2


# -- topics ----------------------------------------------------------------------------------


def test_topics_create_maps_to_the_create_subcommand() -> None:
    args = resolved(
        "topics",
        "--create",
        "--topic",
        "T",
        "--partitions",
        "3",
        "--replication-factor",
        "1",
        "--config",
        "retention.ms=1000",
        "--config",
        "cleanup.policy=compact",
        "--bootstrap-server",
        "B:9092",
    )
    assert args.topics_command == "create"
    assert (args.name, args.partitions, args.replication_factor) == ("T", 3, 1)
    assert args.config == ["retention.ms=1000", "cleanup.policy=compact"]
    assert args.bootstrap_server == "B:9092" and args.if_not_exists is False
    same_as(
        ["topics", "--create", "--topic", "T", "--if-not-exists", "--dir", "D"],
        ["topics", "create", "T", "--if-not-exists", "--dir", "D"],
        "topics_command",
        "name",
        "partitions",
        "replication_factor",
        "if_not_exists",
        "dir",
        "timeout",
        "json",
    )


@pytest.mark.parametrize(
    ("kafka", "native"),
    [
        (["--list", "--bootstrap-server", "B"], ["list", "--bootstrap-server", "B"]),
        (
            ["--describe", "--topic", "T", "--bootstrap-server", "B"],
            ["describe", "T", "--bootstrap-server", "B"],
        ),
        (
            ["--describe", "--json", "--bootstrap-controller", "C"],
            ["describe", "--json", "--bootstrap-controller", "C"],
        ),
        (
            ["--delete", "--topic", "T", "--bootstrap-server", "B"],
            ["delete", "T", "--bootstrap-server", "B"],
        ),
        (
            [
                "--alter",
                "--topic",
                "T",
                "--partitions",
                "6",
                "--config",
                "a=1",
                "--delete-config",
                "b",
                "--dir",
                "D",
                "--timeout",
                "30",
            ],
            [
                "alter",
                "T",
                "--partitions",
                "6",
                "--config",
                "a=1",
                "--delete-config",
                "b",
                "--dir",
                "D",
                "--timeout",
                "30",
            ],
        ),
    ],
)
def test_topics_actions_map_to_their_subcommands(kafka: list[str], native: list[str]) -> None:
    a, b = resolved("topics", *kafka), parse("topics", *native)
    shared = set(vars(b)) - {"func", "kafka_style"}
    assert {k: getattr(a, k) for k in shared} == {k: getattr(b, k) for k in shared}


def test_topics_subcommand_form_is_unchanged() -> None:
    args = parse(
        "topics",
        "create",
        "T",
        "--partitions",
        "3",
        "--replication-factor",
        "1",
        "--config",
        "k=v",
        "--bootstrap-controller",
        "C",
    )
    assert (args.topics_command, args.name, args.partitions, args.config) == (
        "create",
        "T",
        3,
        ["k=v"],
    )
    assert args.bootstrap_controller == "C" and args.bootstrap_server is None


def test_topics_contradictions_are_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    usage_exit("topics", "--create", "--list", "--topic", "T")
    assert "not allowed with" in capsys.readouterr().err
    usage_exit("topics", "--create", "--partitions", "3", "--bootstrap-server", "B")
    usage_exit("topics", "--delete", "--bootstrap-server", "B")
    usage_exit("topics", "--list", "--partitions", "3")
    usage_exit("topics", "--describe", "--replication-factor", "3")
    usage_exit("topics", "--topic", "T")  # an option without an action
    usage_exit("topics", "--topic", "T", "list")  # flags and a subcommand word
    usage_exit("topics", "--create", "--topic", "T", "--partitions", "three")


def test_topics_create_without_topic_names_the_missing_flag(
    capsys: pytest.CaptureFixture[str],
) -> None:
    usage_exit("topics", "--create", "--partitions", "3")
    assert "--create needs --topic" in capsys.readouterr().err


def test_two_targets_are_refused_before_connecting(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["topics", "list", "--bootstrap-server", "127.0.0.1:1", "--dir", "D"])
    assert code == 2 and "give one" in capsys.readouterr().err


def test_topics_without_anything_prints_help() -> None:
    args = parse("topics")
    assert args.func(args) == 2


# -- groups ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kafka", "native"),
    [
        (["--list", "--bootstrap-server", "B"], ["list", "--bootstrap-server", "B"]),
        (
            ["--describe", "--group", "G", "--members", "--bootstrap-server", "B"],
            ["describe", "G", "--members", "--bootstrap-server", "B"],
        ),
        (
            [
                "--reset-offsets",
                "--group",
                "G",
                "--topic",
                "T",
                "--to-earliest",
                "--execute",
                "--bootstrap-server",
                "B",
            ],
            [
                "reset-offsets",
                "G",
                "--topic",
                "T",
                "--to-earliest",
                "--execute",
                "--bootstrap-server",
                "B",
            ],
        ),
        (
            [
                "--reset-offsets",
                "--group",
                "G",
                "--all-topics",
                "--shift-by",
                "-2",
                "--dry-run",
                "--dir",
                "D",
            ],
            ["reset-offsets", "G", "--all-topics", "--shift-by", "-2", "--dry-run", "--dir", "D"],
        ),
        (
            ["--delete", "--group", "G", "--bootstrap-server", "B", "--json"],
            ["delete", "G", "--bootstrap-server", "B", "--json"],
        ),
    ],
)
def test_groups_actions_map_to_their_subcommands(kafka: list[str], native: list[str]) -> None:
    a, b = resolved("groups", *kafka), parse("groups", *native)
    shared = set(vars(b)) - {"func", "kafka_style"}
    assert {k: getattr(a, k) for k in shared} == {k: getattr(b, k) for k in shared}


def test_groups_contradictions_are_usage_errors() -> None:
    usage_exit("groups", "--list", "--describe", "--group", "G")
    usage_exit("groups", "--describe", "--bootstrap-server", "B")  # no --group
    usage_exit("groups", "--list", "--to-earliest")
    usage_exit("groups", "--reset-offsets", "--group", "G", "--to-earliest")  # no scope
    usage_exit(
        "groups", "--reset-offsets", "--group", "G", "--all-topics", "--to-earliest", "--to-latest"
    )


# -- consume ---------------------------------------------------------------------------------


def consume_args(*extra: str) -> argparse.Namespace:
    args = parse("consume", "--bootstrap-server", "B", "--topic", "T", *extra)
    cmd_consume.apply_properties(args)
    return args


def test_consume_properties_and_consumer_properties() -> None:
    args = consume_args(
        "--from-beginning",
        "--group",
        "G",
        "--property",
        "print.key=true",
        "--property",
        "key.separator=:",
        "--property",
        "print.offset=TRUE",
        "--consumer-property",
        "isolation.level=read_committed",
        "--max-messages",
        "5",
    )
    assert (args.print_key, args.print_offset, args.print_timestamp) == (True, True, False)
    assert args.key_separator == ":" and args.max_messages == 5
    config = cmd_consume.consumer_config(args, "B")
    assert config["isolation.level"] == "read_committed"
    assert config["group.id"] == "G" and config["auto.offset.reset"] == "earliest"
    record = ConsumerRecord.create("T", 2, 7, 1000, 0, b"k", b"v")
    assert cmd_consume.format_record(record, args) == "Offset:7:k:v"
    args = consume_args(
        "--property",
        "print.partition=true",
        "--property",
        "print.value=false",
        "--property",
        "print.timestamp=true",
    )
    assert cmd_consume.format_record(record, args) == "CreateTime:1000\tPartition:2"


def test_consume_default_output_is_unchanged() -> None:
    args = consume_args("--print-key", "--print-offset")
    record = ConsumerRecord.create("T", 0, 3, 1000, 0, b"k", b"v")
    assert cmd_consume.format_record(record, args) == "Offset:3\tk\tv"
    assert cmd_consume.consumer_config(args, "B")["isolation.level"] == "read_uncommitted"


@pytest.mark.parametrize(
    "extra",
    [
        ["--property", "print.nothing=true"],
        ["--property", "print.key=yes"],
        ["--property", "print.key"],
    ],
)
def test_consume_bad_properties_fail_at_parse_time(extra: list[str]) -> None:
    with pytest.raises(SystemExit) as raised:
        parse("consume", "--bootstrap-server", "B", "--topic", "T", *extra)
    assert raised.value.code == 2


@pytest.mark.parametrize(
    "extra",
    [
        ["--format", "json", "--property", "print.key=true"],
        ["--format", "kv", "--property", "print.offset=true"],
        ["--from-beginning", "--consumer-property", "auto.offset.reset=latest"],
        ["--group", "G", "--consumer-property", "group.id=H"],
        [
            "--isolation-level",
            "read_committed",
            "--consumer-property",
            "isolation.level=read_uncommitted",
        ],
    ],
)
def test_consume_contradictions_exit_2(
    extra: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["consume", "--bootstrap-server", "127.0.0.1:1", "--topic", "T", *extra])
    assert code == 2 and "kraftlog consume: error:" in capsys.readouterr().err


# -- produce ---------------------------------------------------------------------------------


def produce_args(*extra: str) -> argparse.Namespace:
    args = parse("produce", "--bootstrap-server", "B", "--topic", "T", *extra)
    cmd_produce.apply_properties(args)
    return args


def test_produce_parse_key_and_producer_properties() -> None:
    args = produce_args(
        "--property",
        "parse.key=true",
        "--property",
        "key.separator=:",
        "--producer-property",
        "acks=all",
        "--producer-property",
        "linger.ms=7",
    )
    assert cmd_produce.parse_line("k1:hello", args) == (b"k1", b"hello", [])
    config = cmd_produce.producer_config(args, "B")
    assert (config["acks"], config["linger.ms"], config["compression.type"]) == ("all", "7", "none")
    # Kafka's default key.separator is a tab.
    args = produce_args("--property", "parse.key=true")
    assert cmd_produce.parse_line("k\tv", args) == (b"k", b"v", [])
    # --producer-property acks applies when --acks is not given.
    assert (
        cmd_produce.producer_config(produce_args("--producer-property", "acks=1"), "B")["acks"]
        == "1"
    )
    assert (
        cmd_produce.producer_config(
            produce_args("--acks", "-1", "--producer-property", "acks=all"), "B"
        )["acks"]
        == "-1"
    )


def test_produce_header_properties() -> None:
    args = produce_args(
        "--property",
        "parse.headers=true",
        "--property",
        "headers.delimiter=|",
        "--property",
        "headers.key.separator==",
    )
    assert cmd_produce.parse_line("h=1|v", args) == (None, b"v", [("h", b"1")])


def test_produce_existing_flags_are_unchanged() -> None:
    args = produce_args("--key-separator", ":")
    assert cmd_produce.parse_line("k:v", args) == (b"k", b"v", [])
    assert cmd_produce.producer_config(args, "B")["acks"] == "all"


@pytest.mark.parametrize(
    "extra",
    [
        ["--property", "key.separator=:"],  # without parse.key it would do nothing
        ["--property", "headers.delimiter=|"],
        ["--acks", "1", "--producer-property", "acks=all"],
        ["--compression-type", "gzip", "--producer-property", "compression.type=zstd"],
    ],
)
def test_produce_contradictions_exit_2(
    extra: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["produce", "--bootstrap-server", "127.0.0.1:1", "--topic", "T", *extra])
    assert code == 2 and "kraftlog produce: error:" in capsys.readouterr().err


def test_produce_unknown_property_fails_at_parse_time() -> None:
    with pytest.raises(SystemExit) as raised:
        parse("produce", "--topic", "T", "--property", "ignore.error=true")
    assert raised.value.code == 2


# -- configs ---------------------------------------------------------------------------------


def test_configs_alter_maps_to_topics_alter_on_the_controllers() -> None:
    args = parse(
        "configs",
        "--alter",
        "--entity-type",
        "topics",
        "--entity-name",
        "T",
        "--add-config",
        "retention.ms=1000,cleanup.policy=[compact,delete]",
        "--delete-config",
        "segment.ms",
        "--bootstrap-controller",
        "C",
    )
    plan = cmd_configs.plan(args)
    assert plan.via == "controllers"
    alter = cmd_configs.topics_args(plan.topics_argv)
    assert (alter.topics_command, alter.name) == ("alter", "T")
    assert alter.config == ["retention.ms=1000", "cleanup.policy=compact,delete"]
    assert alter.delete_config == ["segment.ms"] and alter.bootstrap_controller == "C"


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (
            [
                "--describe",
                "--entity-type",
                "topics",
                "--entity-name",
                "T",
                "--bootstrap-server",
                "B",
            ],
            ("topics", "T", "brokers"),
        ),
        (["--describe", "--topic", "T", "--dir", "D", "--all"], ("topics", "T", "controllers")),
        (
            [
                "--describe",
                "--entity-type",
                "brokers",
                "--entity-name",
                "101",
                "--bootstrap-server",
                "B",
            ],
            ("brokers", "101", "brokers"),
        ),
        (["--describe", "--broker", "101", "--dir", "D"], ("brokers", "101", "brokers")),
    ],
)
def test_configs_describe_targets(argv: list[str], expected: tuple[str, str, str]) -> None:
    plan = cmd_configs.plan(parse("configs", *argv))
    assert (plan.kind, plan.name, plan.via) == expected and not plan.topics_argv


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            [
                "--alter",
                "--topic",
                "T",
                "--add-config",
                "a=1",
                "--bootstrap-server",
                "B",
                "--dir",
                "D",
            ],
            "give one",
        ),
        (["--alter", "--broker", "101", "--add-config", "a=1", "--dir", "D"], "static"),
        (["--alter", "--topic", "T", "--dir", "D"], "--add-config or --delete-config"),
        (["--describe", "--topic", "T", "--add-config", "a=1"], "go with --alter"),
        (["--describe", "--broker", "101", "--bootstrap-controller", "C"], "--bootstrap-server"),
        (
            [
                "--describe",
                "--entity-type",
                "brokers",
                "--entity-name",
                "x",
                "--bootstrap-server",
                "B",
            ],
            "named by its id",
        ),
        (["--describe", "--entity-type", "topics", "--bootstrap-server", "B"], "--entity-name"),
        (["--describe", "--topic", "T", "--broker", "1", "--bootstrap-server", "B"], "one entity"),
        (["--topic", "T", "--bootstrap-server", "B"], "--describe or --alter"),
        (["--describe", "--topic", "T", "--bootstrap-server", "B", "--dir", "D"], "give one"),
        (["--alter", "--topic", "T", "--add-config", "a=[1", "--dir", "D"], "unbalanced"),
    ],
)
def test_configs_contradictions_exit_2(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["configs", *argv]) == 2
    assert message in capsys.readouterr().err


def test_configs_two_actions_fail_at_parse_time() -> None:
    with pytest.raises(SystemExit) as raised:
        parse("configs", "--describe", "--alter", "--topic", "T")
    assert raised.value.code == 2


def test_split_list_keeps_bracketed_commas() -> None:
    assert cmd_configs.split_list("a=1, b=[x,y] ,c=") == ["a=1", "b=x,y", "c="]
