"""``kraftlog configs``: describe and alter topic and broker configs (cf. kafka-configs.sh).

    kraftlog configs --describe (--entity-type topics|brokers --entity-name N | --topic T
        | --broker ID) [--all] (--bootstrap-server B | --bootstrap-controller C | --dir D) [--json]
    kraftlog configs --alter (--entity-type topics --entity-name T | --topic T)
        [--add-config K=V[,K=V...]] [--delete-config K[,K...]]
        (--bootstrap-server B | --bootstrap-controller C | --dir D) [--json]

Which target each form needs:

- ``--alter`` changes a topic's overrides: it runs
  ``kraftlog topics alter T --config K=V ... --delete-config K ...`` with either target (through
  a broker: IncrementalAlterConfigs, which the broker forwards to the active controller).
  Broker configs are static (server.properties) and cannot be altered.
- ``--describe`` of a topic works with either target (DescribeConfigs through a broker, which
  asks the active controller, or the controllers directly). It prints the topic's overrides,
  ``--all`` every config with the defaults.
- ``--describe`` of a broker needs the brokers (``--bootstrap-server``, or ``--dir``: that
  cluster's brokers): each broker describes only its own settings, all static, and the
  controllers do not hold them.

``--add-config`` takes kafka-configs.sh's list syntax: ``k1=v1,k2=[a,b]`` (brackets keep a
value's commas). Contradictions are usage errors (exit 2); a request the cluster rejects prints
the error and exits 1.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from common.config_resources import RESOURCE_BROKER, RESOURCE_TOPIC
from common.configdef import ConfigError
from deploy import cmd_topics
from deploy.admin import (
    AdminError,
    add_target_args,
    controller_target_flags,
    error_text,
    fail,
    print_json,
    run_admin_command,
)
from deploy.cmd_produce import CommandError, resolve_bootstrap
from deploy.kafka_style_args import UsageError, usage_error
from kraftlog_client import Admin, KafkaError
from metadata.client import ControllerClient

PROG = "kraftlog configs"
TOPICS, BROKERS = "topics", "brokers"


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "configs",
        help="describe and alter topic and broker configs (as kafka-configs.sh)",
        description="Describe and alter configs with kafka-configs.sh's flags. --alter (topics "
        "only) and --describe of a topic take either target; --describe of a broker needs the "
        "brokers (--bootstrap-server or --dir).",
    )
    action = p.add_mutually_exclusive_group()
    action.add_argument("--describe", action="store_true", help="show an entity's configs")
    action.add_argument("--alter", action="store_true", help="change a topic's configs")
    p.add_argument("--entity-type", choices=(TOPICS, BROKERS))
    p.add_argument("--entity-name", metavar="NAME", help="a topic name or a broker id")
    p.add_argument("--topic", metavar="T", help="the same as --entity-type topics --entity-name T")
    p.add_argument(
        "--broker", metavar="ID", help="the same as --entity-type brokers --entity-name ID"
    )
    p.add_argument(
        "--add-config",
        action="append",
        default=[],
        metavar="K=V[,K=V...]",
        help="--alter: set these (repeatable)",
    )
    p.add_argument(
        "--delete-config",
        action="append",
        default=[],
        metavar="K[,K...]",
        help="--alter: remove these overrides (repeatable)",
    )
    p.add_argument("--all", action="store_true", help="--describe: every config, defaults included")
    add_target_args(p)
    group = p.add_argument_group("or where the brokers are (Kafka protocol)")
    group.add_argument(
        "--bootstrap-server", metavar="HOST:PORT[,...]", help="brokers' Kafka listeners"
    )
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run)


def split_list(text: str) -> list[str]:
    """kafka-configs.sh's comma-separated list; ``[...]`` keeps a value's commas (and loses
    its brackets): ``a=1,b=[x,y]`` -> ``["a=1", "b=x,y"]``."""
    items: list[str] = []
    current: list[str] = []
    depth = 0
    for ch in text:
        if ch == "," and depth == 0:
            items.append("".join(current))
            current = []
        elif ch in "[]":
            depth += 1 if ch == "[" else -1
            if depth < 0:
                raise UsageError(f"unbalanced ']' in {text!r}")
        else:
            current.append(ch)
    if depth:
        raise UsageError(f"unbalanced '[' in {text!r}")
    items.append("".join(current))
    return [i.strip() for i in items if i.strip()]


def entity(args: argparse.Namespace) -> tuple[str, str]:
    """(entity type, name) from --entity-type/--entity-name or the --topic/--broker forms."""
    named = [(TOPICS, args.topic), (BROKERS, args.broker)]
    given = [(t, n) for t, n in named if n is not None]
    if args.entity_type is not None or args.entity_name is not None:
        given.append((args.entity_type, args.entity_name))
    if len(given) != 1:
        raise UsageError("name one entity: --entity-type and --entity-name, --topic or --broker")
    kind, name = given[0]
    if kind is None or not name:
        raise UsageError("give both --entity-type and --entity-name")
    if kind == BROKERS and not name.isdigit():
        raise UsageError(f"--entity-name {name!r}: a broker is named by its id")
    return kind, name


@dataclass(frozen=True)
class Plan:
    """What the arguments ask for: ``topics_argv`` (an alter, run as ``kraftlog topics``) or a
    describe of ``kind``/``name`` through ``via`` ("brokers" or "controllers")."""

    kind: str
    name: str
    via: str
    topics_argv: tuple[str, ...] = ()


def _common(args: argparse.Namespace) -> list[str]:
    return ["--timeout", str(args.timeout)] + (["--json"] if args.json else [])


def _controller_target(args: argparse.Namespace) -> list[str]:
    argv = [word for pair in controller_target_flags(args) for word in pair]
    return [*argv, *_common(args)]


def plan(args: argparse.Namespace) -> Plan:
    """Check the arguments and decide; raises :class:`UsageError` on contradictions."""
    if not (args.describe or args.alter):
        raise UsageError("give --describe or --alter")
    kind, name = entity(args)
    if args.bootstrap_server and controller_target_flags(args):
        raise UsageError(
            "--bootstrap-server and the controller options both name the target: give one"
        )
    if args.describe:
        if args.add_config or args.delete_config:
            raise UsageError("--add-config and --delete-config go with --alter")
        if kind == BROKERS:
            if args.bootstrap_controller or args.command_config:
                raise UsageError(
                    "a broker describes its own configs: use --bootstrap-server "
                    "(or --dir), not the controllers"
                )
            return Plan(kind, name, "brokers")
        return Plan(kind, name, "brokers" if args.bootstrap_server else "controllers")
    if kind == BROKERS:
        raise UsageError(
            "broker configs are static (server.properties): kraftlog cannot alter them"
        )
    if args.all:
        raise UsageError("--all goes with --describe")
    sets = [item for text in args.add_config for item in split_list(text)]
    deletes = [item for text in args.delete_config for item in split_list(text)]
    if not sets and not deletes:
        raise UsageError("--alter needs --add-config or --delete-config")
    argv = ["topics", "alter", name]
    for item in sets:
        argv += ["--config", item]
    for item in deletes:
        argv += ["--delete-config", item]
    if args.bootstrap_server:
        target = ["--bootstrap-server", args.bootstrap_server]
        return Plan(kind, name, "brokers", tuple(argv + target + _common(args)))
    return Plan(kind, name, "controllers", tuple(argv + _controller_target(args)))


def topics_args(argv: tuple[str, ...]) -> argparse.Namespace:
    """``kraftlog topics ...`` arguments parsed by that command's own parser."""
    root = argparse.ArgumentParser(prog="kraftlog")
    cmd_topics.register(root.add_subparsers(dest="command"))
    return root.parse_args(list(argv))


def run(args: argparse.Namespace) -> int:
    try:
        chosen = plan(args)
    except UsageError as e:
        return usage_error(PROG, str(e))
    if chosen.topics_argv:
        alter = topics_args(chosen.topics_argv)
        return int(alter.func(alter))
    if chosen.via == "controllers":
        return run_admin_command(
            lambda client, a: _describe_on_controllers(client, a, chosen), args
        )
    try:
        config = {
            "bootstrap.servers": resolve_bootstrap(args),
            "default.api.timeout.ms": int(args.timeout * 1000),
        }
        with Admin(config) as admin:
            if chosen.kind == TOPICS:
                entries = admin.describe_config_entries(RESOURCE_TOPIC, [chosen.name])
            else:
                entries = admin.describe_config_entries(
                    RESOURCE_BROKER, [chosen.name], node_id=int(chosen.name)
                )
    except (CommandError, ConfigError, KafkaError, ValueError) as e:
        return fail(str(e))
    rows = [(e.name, e.value, e.is_default) for e in entries.get(chosen.name, [])]
    return _print(chosen, rows, args)


def _describe_on_controllers(
    client: ControllerClient, args: argparse.Namespace, chosen: Plan
) -> int:
    result = client.describe_configs([chosen.name]).get(chosen.name)
    if result is None:
        raise AdminError(f"no answer for topic {chosen.name}")
    if result.error_code:
        return fail(
            f"cannot describe topic {chosen.name}: "
            f"{error_text(result.error_code, result.error_message)}"
        )
    return _print(chosen, [(c.name, c.value, c.is_default) for c in result.configs], args)


def _print(chosen: Plan, rows: list[tuple[str, str | None, bool]], args: argparse.Namespace) -> int:
    shown = sorted((k, v) for k, v, is_default in rows if args.all or not is_default)
    if args.json:
        print_json({"entity_type": chosen.kind, "entity_name": chosen.name, "configs": dict(shown)})
        return 0
    if chosen.kind == BROKERS:
        title = f"Static configs for broker {chosen.name} are:"
    elif args.all:
        title = f"All configs for topic {chosen.name} are:"
    else:
        title = f"Dynamic configs for topic {chosen.name} are:"
    print(title)
    for key, value in shown:
        print(f"  {key}={'null' if value is None else value}")
    return 0
