"""Finding a coordinator and sending it one request, for the admin helpers (groups and
transactions).

FindCoordinator (key type 0 = group, 1 = transactional id) names the broker; its address comes
from metadata. A coordinator moving or loading (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE,
COORDINATOR_LOAD_IN_PROGRESS) or a retriable connection error is retried after the backoff
until the deadline (``time.monotonic()`` seconds). Blocking; one thread at a time per
NetworkClient.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from common.error_codes import ErrorCode
from common.protocol.api_keys import ApiKey
from common.protocol.codec import Body
from common.protocol.message_base import Message
from common.protocol.messages.find_coordinator import FindCoordinatorRequest
from kraftlog_client.consumer_coordinator import GROUP_KEY_TYPE, error_code
from kraftlog_client.errors import KafkaError, KafkaTimeoutError
from kraftlog_client.network_client import NetworkClient

COORDINATOR_RETRIABLE = frozenset(
    {
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.NOT_COORDINATOR,
    }
)


def sleep_until_retry(deadline: float, backoff_ms: int) -> None:
    time.sleep(min(backoff_ms / 1000.0, max(0.0, deadline - time.monotonic())))


def remaining_ms(deadline: float, what: str) -> float:
    """Milliseconds left before ``deadline``; KafkaTimeoutError naming ``what`` if none."""
    remaining = (deadline - time.monotonic()) * 1000.0
    if remaining <= 0:
        raise KafkaTimeoutError(f"{what} did not finish in time")
    return remaining


def find_coordinator(
    client: NetworkClient,
    key: str,
    deadline: float,
    backoff_ms: int,
    key_type: int = GROUP_KEY_TYPE,
) -> int:
    """The node id of ``key``'s coordinator (its address learnt from metadata)."""
    while True:
        remaining = remaining_ms(deadline, f"FindCoordinator({key})")
        response = client.request(
            None, ApiKey.FIND_COORDINATOR, FindCoordinatorRequest(key, key_type), remaining
        )
        code = error_code(response.error_code)
        if code == ErrorCode.NO_ERROR:
            node: int = response.node_id
            if client.metadata.broker(node) is None:
                client.fetch_metadata([], remaining_ms(deadline, "Metadata"))
            return node
        if code not in COORDINATOR_RETRIABLE:
            raise KafkaError(code, f"FindCoordinator({key})")
        sleep_until_retry(deadline, backoff_ms)


def with_coordinator(
    client: NetworkClient,
    key: str,
    api_key: ApiKey,
    body: dict[str, Any] | Message,
    deadline: float,
    backoff_ms: int,
    error_of: Callable[[Body], int],
    key_type: int = GROUP_KEY_TYPE,
) -> tuple[int, Body]:
    """Send ``body`` to ``key``'s coordinator; retry while ``error_of(response)`` is a
    coordinator-moving error. Returns (coordinator, response)."""
    while True:
        node = find_coordinator(client, key, deadline, backoff_ms, key_type)
        try:
            response = client.request(node, api_key, body, remaining_ms(deadline, api_key.name))
        except KafkaTimeoutError:
            raise
        except KafkaError as e:
            if not e.retriable:
                raise
            sleep_until_retry(deadline, backoff_ms)
            continue
        code = error_of(response)
        if code not in COORDINATOR_RETRIABLE:
            return node, response
        sleep_until_retry(deadline, backoff_ms)
