"""``kraftlog acls`` with kafka-acls.sh's flags: each Kafka-style invocation parses into the
same arguments as the subcommand form, ``--resource-pattern-type`` picks the pattern type, and
contradictions are usage errors. Parsing only: nothing here connects to a cluster."""

from __future__ import annotations

import argparse

import pytest

from common.security.acl import AclOperation, PatternType
from deploy import cmd_acls
from deploy.admin import AdminError
from deploy.cli import build_parser


def parse(*argv: str) -> argparse.Namespace:
    return build_parser(argv).parse_args(list(argv))


def resolved(*argv: str) -> argparse.Namespace:
    args = parse(*argv)
    sub = args.kafka_style.resolve(args)
    assert sub is not None
    return sub


B = ("--bootstrap-server", "127.0.0.1:9092")


def test_add_maps_to_the_add_subcommand() -> None:
    kafka = resolved(
        "acls", "--add", "--allow-principal", "User:a", "--deny-principal", "User:b",
        "--operation", "Read", "--operation", "Write", "--topic", "t-",
        "--resource-pattern-type", "PREFIXED", "--host", "10.0.0.1", *B,
    )  # fmt: skip
    native = parse(
        "acls", "add", "--allow-principal", "User:a", "--deny-principal", "User:b",
        "--operation", "Read", "--operation", "Write", "--topic", "t-",
        "--resource-pattern-type", "prefixed", "--host", "10.0.0.1", *B,
    )  # fmt: skip
    for key in (
        "allow_principal",
        "deny_principal",
        "operation",
        "topic",
        "resource_pattern_type",
        "host",
        "bootstrap_server",
    ):
        assert getattr(kafka, key) == getattr(native, key), key
    assert kafka.acls_command == "add"
    assert kafka.operation == [AclOperation.READ, AclOperation.WRITE]
    assert cmd_acls._pattern_type(kafka, PatternType.LITERAL) is PatternType.PREFIXED


def test_list_and_remove_map_to_their_subcommands() -> None:
    listed = resolved("acls", "--list", "--principal", "User:a", "--cluster", "--json", *B)
    assert listed.acls_command == "list" and listed.cluster and listed.json
    assert listed.principal == "User:a"
    removed = resolved("acls", "--remove", "--force", *B)
    assert removed.acls_command == "remove" and removed.yes
    flt = cmd_acls._filter(
        resolved("acls", "--list", "--group", "app", "--resource-pattern-type", "match")
    )
    assert flt.pattern_type is PatternType.MATCH and flt.name == "app"
    assert cmd_acls._filter(parse("acls", "list")).pattern_type is PatternType.ANY
    assert (
        cmd_acls._filter(parse("acls", "list", "--topic", "t")).pattern_type is PatternType.LITERAL
    )


def test_contradictions_are_refused() -> None:
    with pytest.raises(AdminError, match="--prefixed contradicts"):
        cmd_acls._filter(parse("acls", "list", "--prefixed", "--resource-pattern-type", "any"))
    for argv in (
        # A binding is literal or prefixed, never a filter value.
        ("acls", "add", "--allow-principal", "User:a", "--operation", "Read", "--topic", "t",
         "--resource-pattern-type", "match"),
        # --force is --remove's; --allow-principal is --add's.
        ("acls", "--list", "--force"),
        ("acls", "--remove", "--allow-principal", "User:a"),
        ("acls", "--add", "--list"),
    ):  # fmt: skip
        with pytest.raises(SystemExit) as raised:
            args = parse(*argv)
            args.func(args)
        assert raised.value.code == 2, argv
