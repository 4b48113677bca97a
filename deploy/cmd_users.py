"""``kraftlog users``: SCRAM credentials in the metadata log (cf. kafka-configs.sh --alter
--add-config 'SCRAM-SHA-512=[password=...]' --entity-type users).

    kraftlog users add NAME [--mechanism SCRAM-SHA-512 ...] [--iterations N]
                            [--password-stdin | --password PW]
    kraftlog users list [--json]
    kraftlog users remove NAME [--mechanism M ...]

The password is salted and hashed here (PBKDF2 with a fresh random salt per mechanism) and only
the salt and the salted password travel to the controller, which stores the derived keys. With
neither ``--password`` nor ``--password-stdin`` the password is read from the terminal without
echo. ``add`` without ``--mechanism`` sets both SCRAM-SHA-256 and SCRAM-SHA-512 (SASL/PLAIN
checks against these too); ``remove`` without it removes every credential of the user.
"""

from __future__ import annotations

import argparse
import getpass
import sys
from typing import Any

from common.security.scram import (
    DEFAULT_ITERATIONS,
    MAX_ITERATIONS,
    MECHANISM_NAMES,
    MIN_ITERATIONS,
    ScramMechanism,
)
from deploy.admin import (
    AdminError,
    add_admin_command,
    connect,
    error_text,
    fail,
    print_json,
    resolve_target,
)
from deploy.command_group import add_command_group
from metadata.client import ControllerError
from metadata.security_client import (
    delete_scram_credentials,
    describe_scram_credentials,
    set_scram_password,
)

# Longest password accepted from stdin (one line).
MAX_PASSWORD_CHARS = 1024


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    _, users_sub = add_command_group(sub, "users", "add, list and remove SCRAM users")

    p = users_sub.add_parser("add", help="create a user or change its password")
    p.add_argument("name")
    p.add_argument(
        "--mechanism",
        action="append",
        choices=MECHANISM_NAMES,
        help="SCRAM mechanism (repeatable; default: both)",
    )
    p.add_argument(
        "--iterations",
        type=int,
        default=DEFAULT_ITERATIONS,
        help=f"PBKDF2 iterations, {MIN_ITERATIONS}..{MAX_ITERATIONS} "
        f"(default {DEFAULT_ITERATIONS})",
    )
    source = p.add_mutually_exclusive_group()
    source.add_argument("--password", help="the password (visible in the process list)")
    source.add_argument(
        "--password-stdin", action="store_true", help="read the password from standard input"
    )
    add_admin_command(p, run=_run, func=_add)

    p = users_sub.add_parser("list", help="users and their SCRAM mechanisms")
    add_admin_command(p, run=_run, func=_list)

    p = users_sub.add_parser("remove", help="remove a user's SCRAM credentials")
    p.add_argument("name")
    p.add_argument("--mechanism", action="append", choices=MECHANISM_NAMES)
    add_admin_command(p, run=_run, func=_remove)


def _run(func: Any, args: argparse.Namespace) -> int:
    try:
        if func is _add:
            password = _read_password(args)  # before connecting: the prompt may take a while
            with connect(resolve_target(args), args.timeout) as client:
                return _add(client, args, password)
        with connect(resolve_target(args), args.timeout) as client:
            return int(func(client, args))
    except (AdminError, ControllerError, ValueError) as e:
        return fail(str(e))


def _read_password(args: argparse.Namespace) -> str:
    if args.password is not None:
        password = args.password
    elif args.password_stdin:
        password = sys.stdin.readline(MAX_PASSWORD_CHARS + 1).rstrip("\r\n")
    else:
        password = getpass.getpass(f"Password for {args.name}: ")
        if getpass.getpass("Again: ") != password:
            raise AdminError("the passwords differ")
    if not password:
        raise AdminError("the password must not be empty")
    if len(password) > MAX_PASSWORD_CHARS:
        raise AdminError(f"the password is longer than {MAX_PASSWORD_CHARS} characters")
    return password


def _mechanisms(names: list[str] | None) -> list[ScramMechanism]:
    if not names:
        return list(ScramMechanism)
    return [ScramMechanism.from_name(n) for n in dict.fromkeys(names)]


def _add(client: Any, args: argparse.Namespace, password: str) -> int:
    mechanisms = _mechanisms(args.mechanism)
    results = set_scram_password(
        client, args.name, password, mechanisms, iterations=args.iterations
    )
    failed = [r for r in results if r.error_code]
    if failed:
        return fail(error_text(failed[0].error_code, failed[0].error_message))
    names = ", ".join(m.mechanism_name for m in mechanisms)
    if args.json:
        print_json({"user": args.name, "mechanisms": [m.mechanism_name for m in mechanisms]})
    else:
        print(f"user {args.name}: {names} credentials set")
    return 0


def _list(client: Any, args: argparse.Namespace) -> int:
    results = describe_scram_credentials(client)
    rows = [
        {
            "user": r.user,
            "credentials": [
                {
                    "mechanism": ScramMechanism(i.mechanism).mechanism_name,
                    "iterations": i.iterations,
                }
                for i in r.credential_infos
            ],
        }
        for r in results
        if r.error_code == 0
    ]
    if args.json:
        print_json(rows)
        return 0
    for row in rows:
        creds = ", ".join(
            f"{c['mechanism']} ({c['iterations']} iterations)" for c in row["credentials"]
        )
        print(f"{row['user']}: {creds}")
    return 0


def _remove(client: Any, args: argparse.Namespace) -> int:
    if args.mechanism:
        mechanisms = _mechanisms(args.mechanism)
    else:
        found = describe_scram_credentials(client, [args.name])
        if not found or found[0].error_code:
            return fail(f"user {args.name} has no SCRAM credentials (RESOURCE_NOT_FOUND)")
        mechanisms = [ScramMechanism(i.mechanism) for i in found[0].credential_infos]
    results = delete_scram_credentials(client, args.name, mechanisms)
    failed = [r for r in results if r.error_code]
    if failed:
        return fail(error_text(failed[0].error_code, failed[0].error_message))
    if args.json:
        print_json({"user": args.name, "removed": [m.mechanism_name for m in mechanisms]})
    else:
        print(f"user {args.name}: {', '.join(m.mechanism_name for m in mechanisms)} removed")
    return 0
