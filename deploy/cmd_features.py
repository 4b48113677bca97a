"""``kraftlog features``: finalized feature levels, like ``kafka-features.sh``.

    kraftlog features describe [--json]
    kraftlog features upgrade --metadata 1.0-IV1     (or a level: --metadata 2)
    kraftlog features upgrade --feature metadata.version=2 [--dry-run]

``describe`` prints each feature with the range every node supports, the finalized level and
the metadata offset it was read at, then every node's reported range and the known levels.
``upgrade`` asks the active controller to raise the level; it refuses (exit 1, with the reason)
while any registered broker or voter does not support the new level or has not reported its
range yet. Levels never go down. What each level adds: docs/operations.md.
"""

from __future__ import annotations

import argparse
from typing import Any

from deploy.admin import (
    AdminError,
    add_admin_command,
    error_text,
    fail,
    print_json,
)
from deploy.command_group import add_command_group
from metadata import features
from metadata import messages as m
from metadata.client import ControllerClient


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    _, features_sub = add_command_group(
        sub, "features", "describe and upgrade finalized feature levels"
    )

    p = features_sub.add_parser("describe", help="supported ranges and finalized levels")
    add_admin_command(p, _describe)

    p = features_sub.add_parser("upgrade", help="raise a finalized feature level")
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument(
        "--metadata",
        metavar="VERSION",
        help="the metadata.version to finalize: a level (2) or its name (1.0-IV1)",
    )
    which.add_argument(
        "--release-version", dest="metadata", metavar="VERSION", help="the same as --metadata"
    )
    which.add_argument("--feature", metavar="NAME=LEVEL", help="e.g. metadata.version=2")
    p.add_argument(
        "--dry-run", action="store_true", help="only check that the upgrade would be accepted"
    )
    add_admin_command(p, _upgrade)


def parse_metadata_version(text: str) -> int:
    """A metadata.version given as a level or a release name."""
    text = text.strip()
    if text.isdigit():
        return int(text)
    for level, (name, _doc) in features.METADATA_VERSIONS.items():
        if name == text:
            return level
    known = ", ".join(f"{lv} ({name})" for lv, (name, _) in features.METADATA_VERSIONS.items())
    raise AdminError(f"unknown metadata.version {text!r}; known: {known}")


def _target(args: argparse.Namespace) -> tuple[str, int]:
    if args.feature:
        name, eq, level = args.feature.partition("=")
        if not eq or not level.strip().isdigit():
            raise AdminError(f"--feature wants NAME=LEVEL, got {args.feature!r}")
        return name.strip(), int(level)
    return features.METADATA_VERSION, parse_metadata_version(args.metadata)


def _upgrade(client: ControllerClient, args: argparse.Namespace) -> int:
    name, level = _target(args)
    response = client.update_features(name, level, validate_only=args.dry_run)
    if args.json:
        print_json(
            {
                "feature": name,
                "level": level,
                "dry_run": args.dry_run,
                "error": None
                if response.error_code == 0
                else error_text(response.error_code, response.error_message),
                "finalized_level": response.finalized_level,
            }
        )
        return 0 if response.error_code == 0 else 1
    if response.error_code != 0:
        return fail(
            f"{name} was not upgraded to {features.level_name(level)}: "
            + error_text(response.error_code, response.error_message)
        )
    verb = "can be upgraded" if args.dry_run else "upgraded"
    print(f"{name} {verb} to {features.level_name(level)}")
    return 0


def _node_range(node: m.NodeFeatures) -> str:
    if node.min_metadata_version <= 0:
        return "not reported"
    return f"{node.min_metadata_version}..{node.max_metadata_version}"


def describe_doc(response: m.DescribeFeaturesResponse) -> dict[str, Any]:
    """The JSON of ``features describe``."""
    reported = [n for n in response.nodes if n.min_metadata_version > 0]
    return {
        "features": [
            {
                "name": name,
                "supported_min": max((n.min_metadata_version for n in reported), default=None),
                "supported_max": min((n.max_metadata_version for n in reported), default=None),
                "finalized_level": level,
                "epoch": response.metadata_offset,
            }
            for name, level in sorted(response.finalized.items())
        ],
        "nodes": [
            {
                "id": n.node_id,
                "role": n.role,
                "min": n.min_metadata_version or None,
                "max": n.max_metadata_version or None,
            }
            for n in response.nodes
        ],
        "levels": [
            {"level": level, "name": name, "adds": doc} for level, name, doc in response.levels
        ],
    }


def _describe(client: ControllerClient, args: argparse.Namespace) -> int:
    response = client.describe_features()
    doc = describe_doc(response)
    if args.json:
        print_json(doc)
        return 0
    for f in doc["features"]:
        low = f["supported_min"]
        high = f["supported_max"]
        print(
            f"Feature: {f['name']}\tSupportedMinVersion: "
            f"{features.level_name(low) if low is not None else '-'}\tSupportedMaxVersion: "
            f"{features.level_name(high) if high is not None else '-'}\t"
            f"FinalizedVersionLevel: {features.level_name(f['finalized_level'])}\t"
            f"Epoch: {f['epoch']}"
        )
    print()
    print("Nodes (metadata.version levels each supports):")
    for n in response.nodes:
        print(f"  {n.role} {n.node_id}: {_node_range(n)}")
    print()
    print("Levels:")
    for level, name, adds in response.levels:
        print(f"  {level}  {name}  {adds}")
    return 0
