"""ApiVersions (18): the APIs this broker handles, with the codec's version ranges."""

from __future__ import annotations

from common.error_codes import ErrorCode
from data_plane.broker.apis import Body, KafkaApis, Request


def advertised_versions() -> list[dict[str, int]]:
    from data_plane.broker.handlers import advertised

    return [
        {"api_key": int(key), "min_version": lo, "max_version": hi}
        for key, (lo, hi) in sorted(advertised().items())
    ]


def handle(apis: KafkaApis, request: Request) -> Body:
    return {
        "error_code": ErrorCode.NO_ERROR,
        "api_keys": advertised_versions(),
        "throttle_time_ms": 0,
    }
