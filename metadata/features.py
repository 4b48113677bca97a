"""Finalized feature levels (Kafka's KIP-584): what ``metadata.version`` allows, and the rules
for raising it.

``metadata.version`` decides which metadata record versions the active controller may write,
so that every node of the cluster can read every record of the log:

=====  =======  ===========================================================================
level  name     what it adds
=====  =======  ===========================================================================
1      1.0-IV0  the records of the first release: brokers (with the clean-shutdown flag),
                topics, partitions with reassignment, configs, producer ids, security
2      1.0-IV1  eligible leader replicas (KIP-966): PartitionRecord and PartitionChangeRecord
                v2; the controller keeps ELRs (metadata.election) only from this level on
=====  =======  ===========================================================================

A metadata log without a FeatureLevelRecord (written before feature levels existed) is at
level 1 (:data:`UNFINALIZED_LEVEL`). The first active controller of a new cluster finalizes
``bootstrap.metadata.version`` (default: the latest level).

Every node supports a range of levels, this code :data:`SUPPORTED`. Brokers report theirs
when they register and in every heartbeat; controllers tell each other through the Raft node
info (metadata.node_info). The active controller

- refuses the registration of a broker whose range does not hold the finalized level
  (UNSUPPORTED_VERSION, with the ranges in the message);
- raises the level (UpdateFeatures) only when every registered broker and every voter has
  reported a range that holds the new level; it never lowers it (INVALID_UPDATE_VERSION);
- appends only records whose version the finalized level allows (:func:`check_writable`; a
  violation is a bug and the append is refused).

A node that replays a FeatureLevelRecord above its own range logs an error that says to
upgrade it (:func:`warn_if_unsupported`); a record it cannot decode is refused with the same
advice (metadata.snapshot).

Pure functions and constants; thread-safe.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from common.error_codes import ErrorCode
from metadata.records import (
    MetadataRecord,
    PartitionChangeRecord,
    PartitionRecord,
    encoded_version,
)

if TYPE_CHECKING:
    from metadata.image import MetadataImage

logger = logging.getLogger(__name__)

METADATA_VERSION = "metadata.version"


@dataclass(frozen=True, slots=True)
class SupportedRange:
    """Levels ``min_level``..``max_level`` inclusive of one feature."""

    min_level: int
    max_level: int

    def __contains__(self, level: object) -> bool:
        return isinstance(level, int) and self.min_level <= level <= self.max_level

    def __str__(self) -> str:
        return f"{self.min_level}..{self.max_level}"


# level -> (release name, what it adds); see the module docstring.
METADATA_VERSIONS: dict[int, tuple[str, str]] = {
    1: ("1.0-IV0", "the first release's metadata records"),
    2: ("1.0-IV1", "eligible leader replicas (KIP-966)"),
}
LATEST_LEVEL = max(METADATA_VERSIONS)
# What this code reads and writes.
SUPPORTED = SupportedRange(min(METADATA_VERSIONS), LATEST_LEVEL)
# The level of a log without a FeatureLevelRecord.
UNFINALIZED_LEVEL = 1
# A broker that registers without reporting a range (written before feature levels existed)
# reads exactly level 1.
LEGACY_RANGE = SupportedRange(1, 1)

# (record type id, version) -> the lowest metadata.version allowing it; versions not listed
# need level 1.
_RECORD_LEVELS: dict[tuple[int, int], int] = {
    (PartitionRecord.TYPE_ID, 2): 2,
    (PartitionChangeRecord.TYPE_ID, 2): 2,
}


def level_name(level: int) -> str:
    known = METADATA_VERSIONS.get(level)
    return f"{level} ({known[0]})" if known is not None else str(level)


def finalized_level(image: MetadataImage) -> int:
    """The cluster's finalized ``metadata.version``."""
    return image.features.get(METADATA_VERSION, UNFINALIZED_LEVEL)


def eligible_leader_replicas_enabled(level: int) -> bool:
    return level >= 2


def required_level(record: MetadataRecord) -> int:
    """The lowest metadata.version at which ``record`` may be written, as it encodes."""
    return _RECORD_LEVELS.get((record.TYPE_ID, encoded_version(record)), 1)


_GATED_TYPES = frozenset(type_id for type_id, _ in _RECORD_LEVELS)


def check_writable(records: Iterable[MetadataRecord], level: int) -> str | None:
    """None when every record may be written at ``level``; else why not."""
    for record in records:
        if record.TYPE_ID not in _GATED_TYPES:
            continue
        needed = required_level(record)
        if needed > level:
            return (
                f"{type(record).__name__} v{encoded_version(record)} needs metadata.version "
                f"{level_name(needed)}, but the finalized level is {level_name(level)}"
            )
    return None


def reported_range(min_level: int, max_level: int) -> SupportedRange:
    """The range a broker reported (0, 0: it reported none, see LEGACY_RANGE)."""
    if min_level <= 0 and max_level <= 0:
        return LEGACY_RANGE
    return SupportedRange(min_level, max_level)


def warn_if_unsupported(name: str, level: int, offset: int) -> None:
    """Log why this node cannot follow a finalized level beyond its range."""
    if name == METADATA_VERSION and level not in SUPPORTED:
        logger.error(
            "metadata offset %d finalizes metadata.version %s, but this node supports only %s: "
            "it cannot read the records written from now on; upgrade this node's software",
            offset,
            level_name(level),
            SUPPORTED,
        )


@dataclass(frozen=True, slots=True)
class UpdateOutcome:
    error_code: ErrorCode
    message: str | None = None


def validate_upgrade(
    feature: str,
    current: int,
    target: int,
    brokers: Mapping[int, SupportedRange | None],
    controllers: Mapping[int, SupportedRange | None],
) -> UpdateOutcome:
    """May ``feature`` go from ``current`` to ``target``? ``brokers`` and ``controllers``: every
    registered broker and every voter with the range it reported (None: not reported yet)."""
    if feature != METADATA_VERSION:
        return UpdateOutcome(ErrorCode.INVALID_UPDATE_VERSION, f"unknown feature {feature!r}")
    if target not in METADATA_VERSIONS:
        return UpdateOutcome(
            ErrorCode.INVALID_UPDATE_VERSION,
            f"metadata.version {target} does not exist (known: {SUPPORTED})",
        )
    if target < current:
        return UpdateOutcome(
            ErrorCode.INVALID_UPDATE_VERSION,
            f"metadata.version cannot be lowered from {level_name(current)} to "
            f"{level_name(target)}: records already written may need the current level",
        )
    for role, nodes in (("controller", controllers), ("broker", brokers)):
        for node_id, supported in sorted(nodes.items()):
            if supported is None:
                return UpdateOutcome(
                    ErrorCode.FEATURE_UPDATE_FAILED,
                    f"{role} {node_id} has not reported its supported metadata.version yet; "
                    "retry in a few seconds",
                )
            if target not in supported:
                return UpdateOutcome(
                    ErrorCode.FEATURE_UPDATE_FAILED,
                    f"{role} {node_id} supports metadata.version {supported} only, not "
                    f"{level_name(target)}: upgrade its software first",
                )
    return UpdateOutcome(ErrorCode.NO_ERROR)
