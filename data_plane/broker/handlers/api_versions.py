"""ApiVersions (18), v0-4: the APIs this broker handles, with the codec's version ranges.

From v3 (flexible) the client names its software; a name or version that does not match
Kafka's pattern (letters, digits, ``.`` and ``-``, starting and ending with a letter or digit)
gets INVALID_REQUEST, as Kafka answers. The connection records the name and version
(:meth:`Connection.note_client_software`, the ``kraftlog_connections_by_client_software``
metric). kraftlog has no feature flags yet: the feature lists are empty and the finalized
features epoch is -1 (unknown), which clients read as "none".
"""

from __future__ import annotations

import re

from common.error_codes import ErrorCode
from data_plane.broker.apis import Body, KafkaApis, Request

# Kafka's ApiVersionsRequest.isValid pattern for the client software name and version.
SOFTWARE_PATTERN = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")
FIRST_SOFTWARE_VERSION = 3


def advertised_versions() -> list[dict[str, int]]:
    from data_plane.broker.handlers import advertised

    return [
        {"api_key": int(key), "min_version": lo, "max_version": hi}
        for key, (lo, hi) in sorted(advertised().items())
    ]


def valid_software(body: dict) -> bool:
    """Whether a v3+ request's client software name and version are well formed."""
    return all(
        SOFTWARE_PATTERN.fullmatch(body.get(key) or "") is not None
        for key in ("client_software_name", "client_software_version")
    )


def handle(apis: KafkaApis, request: Request) -> Body:
    if request.header.api_version >= FIRST_SOFTWARE_VERSION and not valid_software(request.body):
        return {"error_code": ErrorCode.INVALID_REQUEST, "api_keys": [], "throttle_time_ms": 0}
    return {
        "error_code": ErrorCode.NO_ERROR,
        "api_keys": advertised_versions(),
        "throttle_time_ms": 0,
    }
