"""What AlterConfigs and IncrementalAlterConfigs share: topic resources are forwarded to the
active controller, which validates and commits them; broker resources are refused (a broker's
settings are its server.properties: kraftlog has no dynamic broker configs); the answer goes
out once this broker's metadata shows what was set and deleted (bounded by request.timeout.ms),
so a DescribeConfigs right after it sees the change."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from common.config_resources import RESOURCE_BROKER, RESOURCE_BROKER_LOGGER, RESOURCE_TOPIC
from common.error_codes import ErrorCode
from data_plane.broker.apis import KafkaApis
from data_plane.broker.handlers.config_acls import ConfigResource
from data_plane.broker.handlers.forwarding import forward
from metadata.client import ControllerError
from metadata.image import MetadataImage

STATIC_BROKER_CONFIG = (
    "broker configs are static in kraftlog (server.properties); restart the broker to change them"
)

# Per topic: key -> value expected in the image (None: expected absent). Keys whose outcome
# cannot be predicted from the request (APPEND / SUBTRACT) are left out.
Expected = dict[str, dict[str, str | None]]


@dataclass(frozen=True, slots=True)
class Outcome:
    """The answer to one resource of an alteration, in the request's order."""

    resource_type: int
    resource_name: str
    error_code: int
    error_message: str | None


def response_entries(outcomes: Sequence[Outcome], entry: Callable[..., Any]) -> list[Any]:
    """The ``responses`` of an AlterConfigs or IncrementalAlterConfigs answer: one ``entry``
    (the API's response entry class) per outcome, in the request's order."""
    return [
        entry(
            error_code=o.error_code,
            error_message=o.error_message,
            resource_type=o.resource_type,
            resource_name=o.resource_name,
        )
        for o in outcomes
    ]


def refused(resource: ConfigResource) -> tuple[int, str] | None:
    """The error of a resource this broker does not forward, None for a topic."""
    rtype = resource.resource_type
    if rtype == RESOURCE_TOPIC:
        return None
    if rtype in (RESOURCE_BROKER, RESOURCE_BROKER_LOGGER):
        return int(ErrorCode.INVALID_REQUEST), STATIC_BROKER_CONFIG
    return int(ErrorCode.INVALID_REQUEST), f"unknown resource type {rtype}"


async def alter(
    apis: KafkaApis,
    resources: Sequence[ConfigResource],
    validate_only: bool,
    method: str,
    changes: Mapping[str, Any],
    expected: Expected,
) -> list[Outcome]:
    """Forward ``changes`` (topic -> what ``apis.controller.<method>`` takes) and answer every
    resource of the request in order."""
    results: dict[str, tuple[int, str | None]] = {}
    if changes:
        try:
            for r in await forward(apis, method, dict(changes), validate_only):
                results[r.resource_name] = (r.error_code, r.error_message)
        except ControllerError as e:
            results = {name: (e.error_code, e.message) for name in changes}
    done = {n for n, (code, _) in results.items() if code == ErrorCode.NO_ERROR}
    if done and not validate_only:
        await apis.wait_for_image(_shows(expected, done), apis.config.request_timeout_ms)
    out = []
    for res in resources:
        error: tuple[int, str | None] | None = refused(res)
        if error is None:
            error = results.get(res.resource_name, (ErrorCode.UNKNOWN_SERVER_ERROR, None))
        out.append(Outcome(res.resource_type, res.resource_name, error[0], error[1]))
    return out


def _shows(expected: Expected, topics: set[str]) -> Callable[[MetadataImage], bool]:
    def visible(image: MetadataImage) -> bool:
        for name in topics:
            current = image.topic_config(name)
            for key, value in expected.get(name, {}).items():
                if current.get(key) != value:
                    return False
        return True

    return visible
