"""Shared plumbing of the admin commands (``topics``, ``quorum``, ``cluster status``).

Where the controllers are: ``--bootstrap-controller host:port,...`` if given, else the local
cluster in ``--dir D``, else ``.cluster`` in the current directory if it holds one.

Reading the metadata: :func:`fetch_image` follows the committed metadata log from the start (a
snapshot plus the records after it) exactly as a broker does, into a
:class:`metadata.image.MetadataImage` — ``topics describe`` then shows what every broker sees.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from common.error_codes import error_name
from deploy.cluster_layout import ClusterLayout, ClusterLayoutError
from metadata.client import ControllerClient, ControllerError
from metadata.delta import MetadataDelta
from metadata.image import MetadataImage
from metadata.snapshot import image_from_snapshot, replay_entries

DEFAULT_CLUSTER_DIR = ".cluster"
DEFAULT_TIMEOUT_S = 10.0
# Bound on FetchMetadata round trips while reading the whole log (each returns up to the
# controller's controller.fetch.metadata.max.records records).
MAX_FETCH_ROUNDS = 10_000


class AdminError(Exception):
    """An admin command cannot proceed; the message is for the operator."""


@dataclass(frozen=True, slots=True)
class Target:
    bootstrap: list[str]
    layout: ClusterLayout | None  # set when the addresses came from a local cluster directory
    # gRPC channel credentials for a control plane with mutual TLS (--command-config).
    credentials: Any = None


def add_target_args(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("where the controllers are")
    group.add_argument(
        "--bootstrap-controller",
        metavar="HOST:PORT[,...]",
        help="controllers' CONTROLLER listeners (controller.quorum.bootstrap.servers)",
    )
    group.add_argument(
        "--dir",
        metavar="D",
        help=f"a local cluster directory (default: {DEFAULT_CLUSTER_DIR} if it holds a cluster)",
    )
    group.add_argument(
        "--command-config",
        metavar="FILE",
        help="properties with kraftlog.control.plane.ssl.enabled=true and the ssl.* keystore "
        "and truststore, for a control plane with mutual TLS",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT_S,
        metavar="SECONDS",
        help=f"how long to keep trying the controllers (default {DEFAULT_TIMEOUT_S:.0f})",
    )


def controller_target_flags(args: argparse.Namespace) -> list[tuple[str, str]]:
    """The controller target options of :func:`add_target_args` given in ``args``, as
    (flag, value) in declaration order."""
    given = (
        ("--bootstrap-controller", args.bootstrap_controller),
        ("--dir", args.dir),
        ("--command-config", args.command_config),
    )
    return [(flag, value) for flag, value in given if value]


def resolve_target(args: argparse.Namespace) -> Target:
    target = _resolve_addresses(args)
    path = getattr(args, "command_config", None)
    if not path:
        return target
    from common.configdef import ConfigError, from_props, load_properties
    from common.security.config import SecurityConfig
    from common.security.errors import TlsConfigError
    from data_plane.security.grpc_tls import channel_credentials

    try:
        config = from_props(SecurityConfig, load_properties(path))
        if not config.control_plane_ssl_enabled:
            return target
        credentials = channel_credentials(config)
    except (OSError, ConfigError, TlsConfigError) as e:
        raise AdminError(f"--command-config {path}: {e}") from None
    return Target(target.bootstrap, target.layout, credentials)


def _resolve_addresses(args: argparse.Namespace) -> Target:
    if getattr(args, "bootstrap_controller", None):
        servers = [s.strip() for s in args.bootstrap_controller.split(",") if s.strip()]
        if not servers:
            raise AdminError("--bootstrap-controller: no addresses given")
        return Target(servers, None)
    directory = getattr(args, "dir", None)
    if directory is None:
        if not ClusterLayout.exists(DEFAULT_CLUSTER_DIR):
            raise AdminError(
                "no controllers given: use --bootstrap-controller HOST:PORT or --dir D "
                f"(no local cluster in ./{DEFAULT_CLUSTER_DIR})"
            )
        directory = DEFAULT_CLUSTER_DIR
    try:
        layout = ClusterLayout.load(directory)
    except ClusterLayoutError as e:
        raise AdminError(str(e)) from None
    return Target(layout.bootstrap_controllers(), layout)


def connect(target: Target, timeout_s: float) -> ControllerClient:
    try:
        return ControllerClient(
            ",".join(target.bootstrap), timeout_s, credentials=target.credentials
        )
    except ValueError as e:
        raise AdminError(f"--bootstrap-controller: {e}") from None


def fetch_image(client: ControllerClient, timeout_s: float = DEFAULT_TIMEOUT_S) -> MetadataImage:
    """The committed metadata image, read at least up to the active controller's offset.

    Any voter may answer FetchMetadata, and a follower's commit point can trail the leader's,
    so the target is the active controller's image offset (DescribeCluster is answered only by
    the active controller, which applies every write before it acknowledges it): whatever a
    client was told had committed before this call is in the returned image (read your writes).
    """
    deadline = time.monotonic() + timeout_s
    image = MetadataImage()
    target: int | None = client.describe_cluster().metadata_offset
    for _ in range(MAX_FETCH_ROUNDS):
        result = client.fetch_metadata(image.offset + 1)
        if target is None or target < 0:
            target = result.committed_offset
        if result.snapshot is not None:
            image = image_from_snapshot(result.snapshot)
        records = [e for e in result.records if e.offset > image.offset]
        if records:
            delta = MetadataDelta(image)
            replay_entries(delta, records)
            image = delta.apply()
        if image.offset >= target:
            return image
        if not records and result.snapshot is None:
            if time.monotonic() >= deadline:
                break
            time.sleep(0.05)
    raise AdminError(f"could not read the metadata log up to offset {target} in time")


def error_text(code: int, message: str | None) -> str:
    return f"{error_name(code)}" + (f": {message}" if message else "")


def print_json(doc: Any) -> None:
    json.dump(doc, sys.stdout, indent=2, sort_keys=False, default=str)
    sys.stdout.write("\n")


def fail(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 1


AdminCommand = Callable[[ControllerClient, argparse.Namespace], int]


def run_admin_command(func: AdminCommand, args: argparse.Namespace) -> int:
    """Connect to the control plane ``args`` name, run ``func``, close; errors print and give 1."""
    try:
        with connect(resolve_target(args), args.timeout) as client:
            return int(func(client, args))
    except (AdminError, ControllerError, ValueError) as e:
        return fail(str(e))


def add_admin_command(
    parser: argparse.ArgumentParser,
    func: AdminCommand,
    run: Callable[[AdminCommand, argparse.Namespace], int] = run_admin_command,
) -> None:
    """The target options and ``--json`` on ``parser``, which then runs ``func`` via ``run``."""
    add_target_args(parser)
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(func=lambda args: run(func, args))
