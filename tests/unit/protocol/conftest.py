"""Shared parameters of the protocol tests: every supported (api key, version)."""

from __future__ import annotations

from common.protocol.api_keys import SUPPORTED_VERSIONS, ApiKey

ALL_VERSIONS = [
    (api_key, version)
    for api_key, (low, high) in SUPPORTED_VERSIONS.items()
    for version in range(low, high + 1)
]
ALL_IDS = [f"{api_key.name}-v{version}" for api_key, version in ALL_VERSIONS]

# APIs kafka-python has no schema for (its copy of Kafka's JSON definitions predates them):
# no oracle to compare with; test_protocol_kip848 checks their bytes by hand instead.
NOT_IN_KAFKA_PYTHON = frozenset({ApiKey.CONSUMER_GROUP_HEARTBEAT, ApiKey.CONSUMER_GROUP_DESCRIBE})
ORACLE_VERSIONS = [(k, v) for k, v in ALL_VERSIONS if k not in NOT_IN_KAFKA_PYTHON]
ORACLE_IDS = [f"{k.name}-v{v}" for k, v in ORACLE_VERSIONS]
