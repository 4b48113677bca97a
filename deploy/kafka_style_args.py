"""The Kafka tools' flags on kraftlog's commands.

``kraftlog topics`` and ``kraftlog groups`` name the action with a subcommand word
(``topics create T``); kafka-topics.sh and kafka-consumer-groups.sh name it with a flag
(``--create --topic T``). :func:`add_kafka_style` declares the flag form on a command's parser
beside its subcommands. When the command is given without a subcommand word, :func:`translate`
turns the flags into that subcommand's own arguments and the command's parser parses them
again, so each action keeps one implementation, one set of defaults and one set of checks: the
translation only moves words.

Contradictions are usage errors (exit status 2, as argparse's own): two action flags (an
argparse mutually exclusive group), an action without its required name (``--create`` without
``--topic``), an option the action does not take (``--partitions`` with ``--list``), and the
flag form mixed with a subcommand word. Nothing given is silently dropped.

:func:`add_property_args` declares the ``--property KEY=VALUE`` options of the console tools,
which :func:`property_pair` checks at parse time.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any

# Namespace attribute holding the chosen action flag's subcommand word.
ACTION_DEST = "kafka_action"
# Namespace attribute holding the translator (bound to its parser) of a command.
TRANSLATOR_DEST = "kafka_style"

VALUE, APPEND, SWITCH = "value", "append", "switch"


class KafkaStyleError(Exception):
    """The Kafka-style flags contradict each other; the message is for the operator."""


class UsageError(Exception):
    """Contradictory arguments found after parsing: the command prints it with
    :func:`usage_error` (exit status 2)."""


@dataclass(frozen=True)
class Option:
    """A Kafka-style option, copied word for word into the subcommand's arguments (the
    subcommand's parser converts and checks the value)."""

    flag: str
    kind: str = VALUE  # VALUE: one value; APPEND: repeatable; SWITCH: takes no value
    metavar: str | None = None
    help: str | None = None

    @property
    def dest(self) -> str:
        # Prefixed so a value given before a subcommand word cannot mix with that
        # subcommand's own attribute of the same name.
        return "kafka_" + self.flag.lstrip("-").replace("-", "_")


@dataclass(frozen=True)
class Action:
    """An action flag (``--create``) and the subcommand it stands for."""

    flag: str
    subcommand: str
    help: str
    # The option whose value becomes the subcommand's positional argument (``--topic``).
    name_option: str | None = None
    name_required: bool = False
    # The options the action takes besides its name option.
    options: frozenset[str] = frozenset()


@dataclass(frozen=True)
class KafkaStyle:
    """The flag form of one command: its actions and options."""

    tool: str  # the Kafka tool it mirrors, for help texts
    actions: tuple[Action, ...]
    options: tuple[Option, ...]

    def action(self, subcommand: str) -> Action:
        return next(a for a in self.actions if a.subcommand == subcommand)


def _given(value: Any) -> bool:
    return value is not None and value is not False and value != []


def translate(style: KafkaStyle, args: argparse.Namespace) -> list[str] | None:
    """The subcommand arguments the Kafka-style flags in ``args`` stand for; None when no
    Kafka-style flag was given. Raises :class:`KafkaStyleError` on contradictions."""
    given = [o for o in style.options if _given(getattr(args, o.dest, None))]
    chosen = getattr(args, ACTION_DEST, None)
    if chosen is None:
        if not given:
            return None
        flags = ", ".join(a.flag for a in style.actions)
        raise KafkaStyleError(f"{given[0].flag} needs an action: one of {flags}")
    action = style.action(chosen)
    for option in given:
        if option.flag != action.name_option and option.flag not in action.options:
            raise KafkaStyleError(f"{option.flag} does not apply to {action.flag}")
    argv = [action.subcommand]
    if action.name_option is not None:
        name_dest = next(o.dest for o in style.options if o.flag == action.name_option)
        name = getattr(args, name_dest, None)
        if name is None and action.name_required:
            raise KafkaStyleError(f"{action.flag} needs {action.name_option}")
        if name is not None:
            argv.append(name)
    for option in given:
        if option.flag == action.name_option:
            continue
        value = getattr(args, option.dest)
        if option.kind == SWITCH:
            argv.append(option.flag)
        elif option.kind == APPEND:
            for item in value:
                argv += [option.flag, item]
        else:
            argv += [option.flag, value]
    return argv


@dataclass(frozen=True)
class Translator:
    """:func:`translate` bound to the command's parser; kept in the parsed arguments so the
    command (and a test) can turn them into the subcommand's arguments."""

    parser: argparse.ArgumentParser
    style: KafkaStyle

    def resolve(self, args: argparse.Namespace) -> argparse.Namespace | None:
        """The parsed subcommand arguments ``args`` stand for; None when it holds no
        Kafka-style flag. A contradiction exits with status 2 (``parser.error``)."""
        try:
            argv = translate(self.style, args)
        except KafkaStyleError as e:
            self.parser.error(str(e))
        if argv is None:
            return None
        resolved = self.parser.parse_args(argv)
        # Keep what the parsers above this command set (the command's name).
        for key, value in vars(args).items():
            if not hasattr(resolved, key):
                setattr(resolved, key, value)
        return resolved

    def run(self, args: argparse.Namespace) -> int:
        """The command given without a subcommand word: run the subcommand its flags name,
        or print the help (exit status 2) when there are none."""
        resolved = self.resolve(args)
        if resolved is None:
            self.parser.print_help()
            return 2
        return int(resolved.func(resolved))


def add_kafka_style(
    parser: argparse.ArgumentParser,
    subparsers: argparse._SubParsersAction,  # type: ignore[type-arg]
    style: KafkaStyle,
) -> None:
    """Declare ``style``'s flags on ``parser`` (whose subcommands are all registered on
    ``subparsers`` already) and make the command without a subcommand word run them."""
    group = parser.add_argument_group(
        f"Kafka-style flags (as {style.tool}; instead of a SUBCOMMAND)"
    )
    actions = group.add_mutually_exclusive_group()
    for action in style.actions:
        actions.add_argument(
            action.flag,
            dest=ACTION_DEST,
            action="store_const",
            const=action.subcommand,
            help=f"{action.help} (= {action.subcommand})",
        )
    for option in style.options:
        if option.kind == SWITCH:
            group.add_argument(
                option.flag, dest=option.dest, action="store_true", default=None, help=option.help
            )
        else:
            group.add_argument(
                option.flag,
                dest=option.dest,
                metavar=option.metavar,
                help=option.help,
                action="append" if option.kind == APPEND else "store",
            )
    translator = Translator(parser, style)
    parser.set_defaults(func=translator.run, **{TRANSLATOR_DEST: translator})
    dests = [ACTION_DEST, *(o.dest for o in style.options)]
    for name, sub in subparsers.choices.items():
        sub.set_defaults(func=_refuse_mixing(parser, name, dests, sub.get_default("func")))


def _refuse_mixing(
    parser: argparse.ArgumentParser,
    subcommand: str,
    dests: Sequence[str],
    func: Callable[[argparse.Namespace], int],
) -> Callable[[argparse.Namespace], int]:
    """``func``, refusing Kafka-style flags given before the subcommand word (they would
    otherwise be ignored)."""

    def run(args: argparse.Namespace) -> int:
        if any(_given(getattr(args, d, None)) for d in dests):
            parser.error(f"Kafka-style flags go without a subcommand: drop them or {subcommand!r}")
        return int(func(args))

    return run


def parse_bool(key: str, value: str) -> bool:
    """``true``/``false`` (any case) as the Kafka tools' boolean properties."""
    text = value.strip().lower()
    if text not in ("true", "false"):
        raise ValueError(f"{key}={value!r}: expected true or false")
    return text == "true"


def property_pair(
    known: Collection[str], booleans: Collection[str] = ()
) -> Callable[[str], tuple[str, str]]:
    """An argparse ``type`` for ``--property KEY=VALUE``: a known key, and true/false for the
    boolean ones; anything else is a usage error at parse time."""

    def parse(text: str) -> tuple[str, str]:
        key, sep, value = text.partition("=")
        key = key.strip()
        if not sep or not key:
            raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
        if key not in known:
            raise argparse.ArgumentTypeError(
                f"{key} is not supported (supported: {', '.join(sorted(known))})"
            )
        if key in booleans:
            try:
                parse_bool(key, value)
            except ValueError as e:
                raise argparse.ArgumentTypeError(str(e)) from None
        return key, value

    return parse


def add_property_args(
    parser: argparse.ArgumentParser,
    *,
    tool: str,
    known: Collection[str],
    booleans: Collection[str],
    client: str,
) -> None:
    """``--property KEY=VALUE`` (the console ``tool``'s properties ``known``, true/false for
    ``booleans``, checked by :func:`property_pair`) and ``--<client>-property KEY=VALUE`` (the
    client's configuration); both repeatable."""
    parser.add_argument(
        "--property",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        type=property_pair(known, booleans=booleans),
        help=f"{tool} property: {', '.join(known)}",
    )
    parser.add_argument(
        f"--{client}-property",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help=f"a {client} configuration property (repeatable)",
    )


def usage_error(prog: str, message: str) -> int:
    """A usage error found after parsing: printed like argparse's, exit status 2."""
    print(f"{prog}: error: {message}", file=sys.stderr)
    return 2
