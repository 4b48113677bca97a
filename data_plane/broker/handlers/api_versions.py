"""ApiVersions (18): the APIs this broker handles, with the codec's version ranges.

From v3 (flexible) the client names its software; a name or version that does not match
Kafka's pattern (letters, digits, ``.`` and ``-``, starting and ending with a letter or digit)
gets INVALID_REQUEST, as Kafka answers. The connection records the name and version
(:meth:`Connection.note_client_software`, the ``kraftlog_connections_by_client_software``
metric). From v3 the answer also carries the feature levels (metadata.features): the
``metadata.version`` range this broker supports, the cluster's finalized level, and as the
finalized features epoch the offset of the metadata image it comes from (as a KRaft broker
answers); ``kafka-features.sh describe`` reads them.
"""

from __future__ import annotations

import re

from common.error_codes import ErrorCode
from common.protocol.messages.api_versions import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    ApiVersionsResponseApiKey,
    ApiVersionsResponseFinalizedFeature,
    ApiVersionsResponseSupportedFeature,
)
from data_plane.broker.apis import KafkaApis, Request
from metadata import features

# Kafka's ApiVersionsRequest.isValid pattern for the client software name and version.
SOFTWARE_PATTERN = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")
FIRST_SOFTWARE_VERSION = 3


def advertised_versions() -> list[ApiVersionsResponseApiKey]:
    from data_plane.broker.handlers import advertised

    return [
        ApiVersionsResponseApiKey(int(key), lo, hi)
        for key, (lo, hi) in sorted(advertised().items())
    ]


def valid_software(body: ApiVersionsRequest) -> bool:
    """Whether a v3+ request's client software name and version are well formed."""
    return all(
        SOFTWARE_PATTERN.fullmatch(value) is not None
        for value in (body.client_software_name, body.client_software_version)
    )


def handle(apis: KafkaApis, request: Request) -> ApiVersionsResponse:
    body = request.body
    if not isinstance(body, ApiVersionsRequest):
        raise TypeError(f"ApiVersions handler given {type(body).__name__}")
    if request.header.api_version >= FIRST_SOFTWARE_VERSION and not valid_software(body):
        return ApiVersionsResponse(error_code=ErrorCode.INVALID_REQUEST)
    image = apis.image
    level = features.finalized_level(image)
    return ApiVersionsResponse(
        error_code=ErrorCode.NO_ERROR,
        api_keys=advertised_versions(),
        throttle_time_ms=0,
        supported_features=[
            ApiVersionsResponseSupportedFeature(
                name=features.METADATA_VERSION,
                min_version=features.SUPPORTED.min_level,
                max_version=features.SUPPORTED.max_level,
            )
        ],
        finalized_features_epoch=image.offset,
        finalized_features=[
            ApiVersionsResponseFinalizedFeature(
                name=features.METADATA_VERSION, max_version_level=level, min_version_level=level
            )
        ],
    )
