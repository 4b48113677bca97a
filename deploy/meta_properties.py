"""Kafka's ``meta.properties``: the identity file of a formatted storage directory.

On-disk layout (one file per directory, a Java ``.properties`` file, Kafka's KRaft version 1)::

    # written by `kraftlog storage format`; do not edit
    cluster.id=<22-character base64url uuid>
    directory.id=<22-character base64url uuid, unique per directory>
    node.id=<int>
    version=1

``kraftlog storage format`` writes it into every directory in ``log.dirs`` and into
``metadata.log.dir``; ``kraftlog start`` refuses to run unless every directory it would use holds
one with the node's ``node.id`` and one common ``cluster.id``. That stops a node from silently
starting on an empty disk (and re-joining as if it had lost nothing) or on another cluster's data.

The file is written to a temporary name, fsynced, renamed over, and the directory fsynced, so a
crash leaves either no file or a whole one.
"""

from __future__ import annotations

import base64
import os
import uuid
from collections.abc import Iterable
from dataclasses import dataclass

from common.configdef import ConfigError, parse_properties
from common.durable_io import write_file_durably

META_PROPERTIES = "meta.properties"
META_VERSION = 1

# Kafka reserves these two ids (Uuid.ZERO_UUID and Uuid.METADATA_TOPIC_ID / ONE_UUID).
_RESERVED_UUIDS = (bytes(16), bytes(15) + b"\x01")


class MetaPropertiesError(Exception):
    """A storage directory is unformatted, from another cluster or node, or unreadable."""


def random_uuid() -> str:
    """A new id in Kafka's form: 16 random bytes (a version-4 UUID), base64url without padding.

    As Kafka's ``Uuid.randomUuid`` does, ids starting with ``-`` (awkward on command lines) and
    the reserved ids are drawn again.
    """
    for _ in range(1000):
        raw = uuid.uuid4().bytes
        text = base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")
        if raw not in _RESERVED_UUIDS and not text.startswith("-"):
            return text
    raise RuntimeError("could not draw a usable uuid in 1000 tries")  # pragma: no cover


def validate_uuid(text: str, *, what: str = "cluster id") -> str:
    """Return ``text`` if it is a 22-character base64url encoding of 16 bytes, else raise."""
    if len(text) != 22:
        raise ConfigError(f"{what} {text!r}: expected 22 base64url characters (a 16-byte uuid)")
    try:
        raw = base64.urlsafe_b64decode(text + "==")
    except (ValueError, TypeError):
        raise ConfigError(f"{what} {text!r}: not base64url") from None
    alphabet = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
    if len(raw) != 16 or not set(text) <= alphabet:
        raise ConfigError(f"{what} {text!r}: not a base64url-encoded 16-byte uuid")
    if raw in _RESERVED_UUIDS:
        raise ConfigError(f"{what} {text!r}: reserved uuid")
    return text


@dataclass(frozen=True, slots=True)
class MetaProperties:
    cluster_id: str
    node_id: int
    directory_id: str
    version: int = META_VERSION

    def to_text(self) -> str:
        return (
            "# written by `kraftlog storage format`; do not edit\n"
            f"cluster.id={self.cluster_id}\n"
            f"directory.id={self.directory_id}\n"
            f"node.id={self.node_id}\n"
            f"version={self.version}\n"
        )


def read_meta_properties(directory: str) -> MetaProperties | None:
    """The directory's meta.properties, or None if the file does not exist."""
    path = os.path.join(directory, META_PROPERTIES)
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        return None
    except OSError as e:
        raise MetaPropertiesError(f"{path}: cannot read: {e.strerror}") from None
    try:
        props = parse_properties(text, source=path)
    except ConfigError as e:
        raise MetaPropertiesError(str(e)) from None
    try:
        version = int(props.get("version", ""))
        node_id = int(props.get("node.id", ""))
    except ValueError:
        raise MetaPropertiesError(f"{path}: version and node.id must be integers") from None
    if version != META_VERSION:
        raise MetaPropertiesError(f"{path}: unsupported meta.properties version {version}")
    cluster_id = props.get("cluster.id", "")
    directory_id = props.get("directory.id", "")
    if not cluster_id or not directory_id:
        raise MetaPropertiesError(f"{path}: cluster.id and directory.id are required")
    return MetaProperties(cluster_id, node_id, directory_id, version)


def write_meta_properties(directory: str, meta: MetaProperties) -> None:
    """Atomically write ``directory``/meta.properties (creating the directory)."""
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, META_PROPERTIES)
    write_file_durably(path, meta.to_text().encode("utf-8"))


def format_directories(
    directories: Iterable[str], *, cluster_id: str, node_id: int, ignore_formatted: bool = False
) -> list[str]:
    """Write meta.properties into each directory; return the directories newly formatted.

    A directory that is already formatted is an error (as in Kafka) unless ``ignore_formatted``;
    even then it must belong to the same cluster and node, so a re-run cannot re-label data.
    """
    validate_uuid(cluster_id)
    dirs = _unique(directories)
    existing = {d: read_meta_properties(d) for d in dirs}
    for d, meta in existing.items():
        if meta is None:
            continue
        if not ignore_formatted:
            raise MetaPropertiesError(
                f"{d} is already formatted (cluster.id={meta.cluster_id}, node.id={meta.node_id});"
                " use --ignore-formatted to skip formatted directories"
            )
        if meta.cluster_id != cluster_id or meta.node_id != node_id:
            raise MetaPropertiesError(
                f"{d} is formatted for cluster.id={meta.cluster_id} node.id={meta.node_id}, "
                f"not cluster.id={cluster_id} node.id={node_id}"
            )
    formatted = []
    for d in dirs:
        if existing[d] is None:
            write_meta_properties(d, MetaProperties(cluster_id, node_id, random_uuid()))
            formatted.append(d)
    return formatted


def check_directories(directories: Iterable[str], *, node_id: int) -> str:
    """Verify every directory is formatted for ``node_id`` and one cluster; return its cluster id.

    Raises MetaPropertiesError with a message naming the first offending directory.
    """
    dirs = _unique(directories)
    if not dirs:
        raise MetaPropertiesError("no storage directories configured")
    cluster_id: str | None = None
    first_dir = ""
    seen_directory_ids: dict[str, str] = {}
    for d in dirs:
        meta = read_meta_properties(d)
        if meta is None:
            raise MetaPropertiesError(
                f"{d} is not formatted (no {META_PROPERTIES}); run `kraftlog storage format "
                "--config <file> --cluster-id <id>` first"
            )
        if meta.node_id != node_id:
            raise MetaPropertiesError(
                f"{d} belongs to node.id={meta.node_id}, but this node is node.id={node_id}"
            )
        if cluster_id is None:
            cluster_id, first_dir = meta.cluster_id, d
        elif meta.cluster_id != cluster_id:
            raise MetaPropertiesError(
                f"{d} belongs to cluster.id={meta.cluster_id}, but {first_dir} belongs to "
                f"cluster.id={cluster_id}: directories from different clusters"
            )
        other = seen_directory_ids.get(meta.directory_id)
        if other is not None:
            raise MetaPropertiesError(
                f"{d} and {other} have the same directory.id (copied directory?)"
            )
        seen_directory_ids[meta.directory_id] = d
    if cluster_id is None:  # pragma: no cover - dirs is non-empty
        raise MetaPropertiesError("no storage directories configured")
    return cluster_id


def _unique(directories: Iterable[str]) -> list[str]:
    out: list[str] = []
    seen: set[str] = set()
    for d in directories:
        key = os.path.realpath(d)
        if key not in seen:
            seen.add(key)
            out.append(d)
    return out
