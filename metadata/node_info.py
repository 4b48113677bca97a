"""What a controller tells the other voters about itself over Raft (raft.syncobj_node's node
info): the metadata.version levels it supports (metadata.features) and the address of its
gRPC control plane (DescribeQuorum's nodes).

Layout: a msgpack map ``{"metadata.version": [min, max], "controller_address": "host:port"}``;
unknown keys are ignored, so later fields can be added.

Pure functions; thread-safe.
"""

from __future__ import annotations

from dataclasses import dataclass

import msgpack

from metadata.features import METADATA_VERSION, SUPPORTED, SupportedRange

ADDRESS_KEY = "controller_address"


@dataclass(frozen=True, slots=True)
class NodeInfo:
    supported: SupportedRange | None  # None: not stated or malformed
    controller_address: str | None


def encode_node_info(controller_address: str, supported: SupportedRange = SUPPORTED) -> bytes:
    return msgpack.packb(
        {
            METADATA_VERSION: [supported.min_level, supported.max_level],
            ADDRESS_KEY: controller_address,
        }
    )


def decode_node_info(data: bytes) -> NodeInfo:
    """Inverse of :func:`encode_node_info`; what does not parse counts as not stated."""
    try:
        doc = msgpack.unpackb(data, raw=False)
    except Exception:  # a peer's bytes: garbage simply states nothing
        return NodeInfo(None, None)
    if not isinstance(doc, dict):
        return NodeInfo(None, None)
    supported = None
    levels = doc.get(METADATA_VERSION)
    if (
        isinstance(levels, list)
        and len(levels) == 2
        and all(type(v) is int for v in levels)
        and 0 < levels[0] <= levels[1]
    ):
        supported = SupportedRange(levels[0], levels[1])
    address = doc.get(ADDRESS_KEY)
    return NodeInfo(supported, address if isinstance(address, str) and address else None)
