"""Helpers shared by the handlers that forward admin requests to the active controller."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from common.error_codes import ErrorCode
from data_plane.broker.apis import KafkaApis
from metadata.client import ControllerError


class NoController(ControllerError):
    def __init__(self) -> None:
        super().__init__(ErrorCode.NOT_CONTROLLER, "this broker has no controller client")


async def forward(apis: KafkaApis, method: str, *args: Any) -> Any:
    """Run ``apis.controller.<method>(*args)`` (a blocking ControllerClient call) on the admin
    thread pool. Raises ControllerError (with its Kafka code) when there is no controller
    client or the controller cannot be reached."""
    if apis.controller is None:
        raise NoController()
    fn: Callable[..., Any] = getattr(apis.controller, method)
    return await apis.call_controller(fn, *args)


def timeout_ms(apis: KafkaApis, requested: int) -> int:
    """A request's ``requested`` timeout_ms bounded by request.timeout.ms (0 or less: the
    bound)."""
    bound = apis.config.request_timeout_ms
    return bound if requested <= 0 else min(requested, bound)


def timeout_s(apis: KafkaApis, requested_ms: int) -> float:
    """A typed request's ``timeout_ms`` bounded by request.timeout.ms (0 or less: the bound),
    in seconds, as ControllerClient calls take it."""
    bound = apis.config.request_timeout_ms
    return (bound if requested_ms <= 0 else min(requested_ms, bound)) / 1000.0
