"""Shared parameters of the protocol tests: every supported (api key, version)."""

from __future__ import annotations

from data_plane.protocol.api_keys import SUPPORTED_VERSIONS

ALL_VERSIONS = [
    (api_key, version)
    for api_key, (low, high) in SUPPORTED_VERSIONS.items()
    for version in range(low, high + 1)
]
ALL_IDS = [f"{api_key.name}-v{version}" for api_key, version in ALL_VERSIONS]
