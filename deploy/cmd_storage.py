"""``kraftlog storage``: format storage directories, make cluster ids, show a directory's identity.

kraftlog storage random-uuid
kraftlog storage format --config server.properties --cluster-id <id> [--ignore-formatted]
kraftlog storage info --config server.properties
"""

from __future__ import annotations

import argparse
import sys

from common.configdef import ConfigError
from deploy.command_group import add_command_group
from deploy.meta_properties import (
    MetaPropertiesError,
    format_directories,
    random_uuid,
    read_meta_properties,
)
from deploy.node_config import load_node_config


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    _, storage_sub = add_command_group(
        sub, "storage", "format storage directories, make cluster ids"
    )

    p = storage_sub.add_parser("random-uuid", help="print a new cluster id")
    p.set_defaults(func=_random_uuid)

    p = storage_sub.add_parser(
        "format", help="write meta.properties into every log dir and the metadata log dir"
    )
    p.add_argument("--config", "-c", required=True, help="the node's server.properties")
    p.add_argument("--cluster-id", "-t", required=True, help="from `storage random-uuid`")
    p.add_argument(
        "--ignore-formatted",
        "-g",
        action="store_true",
        help="skip directories already formatted for this cluster and node",
    )
    p.set_defaults(func=_format)

    p = storage_sub.add_parser("info", help="show the meta.properties of each directory")
    p.add_argument("--config", "-c", required=True)
    p.set_defaults(func=_info)


def _random_uuid(_args: argparse.Namespace) -> int:
    print(random_uuid())
    return 0


def _format(args: argparse.Namespace) -> int:
    try:
        settings = load_node_config(args.config)
        formatted = format_directories(
            settings.storage_dirs(),
            cluster_id=args.cluster_id,
            node_id=settings.node_id,
            ignore_formatted=args.ignore_formatted,
        )
    except (ConfigError, MetaPropertiesError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"error: {e.filename}: {e.strerror}", file=sys.stderr)
        return 1
    for d in formatted:
        print(f"Formatted {d} (cluster.id={args.cluster_id}, node.id={settings.node_id})")
    if not formatted:
        print("All directories were already formatted.")
    return 0


def _info(args: argparse.Namespace) -> int:
    try:
        settings = load_node_config(args.config)
        rows = [(d, read_meta_properties(d)) for d in settings.storage_dirs()]
    except (ConfigError, MetaPropertiesError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    status = 0
    for d, meta in rows:
        if meta is None:
            print(f"{d}: not formatted")
            status = 1
        else:
            print(
                f"{d}: cluster.id={meta.cluster_id} node.id={meta.node_id} "
                f"directory.id={meta.directory_id} version={meta.version}"
            )
    return status
