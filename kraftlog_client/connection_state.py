"""ConnectionState: the life cycle of one client connection to a broker, as a state machine
with no sockets (:class:`~kraftlog_client.broker_connection.BrokerConnection` drives it).

States and their legal transitions::

    CONNECTING --socket connected--> [TLS_HANDSHAKING] --> NEGOTIATING --ApiVersions answered-->
        [AUTHENTICATING: SaslHandshake v1, SaslAuthenticate until complete] --> READY
         \\______________ any error, timeout or close() ______________/--> CLOSED

It also keeps what the connection knows between events: the API versions negotiated from the
broker's ApiVersions answer (the highest version both sides speak, per API), the requests in
flight in the order they were sent (Kafka answers in order on a connection, so a response
belongs to the oldest one and must carry its correlation id), correlation ids (31-bit,
wrapping), and the deadlines: the connect timeout until NEGOTIATING, each request's timeout
after.

Illegal transitions raise :class:`ConnectionStateError` and change nothing. Clocks are passed
in (``now_s``, monotonic seconds).

Thread-safety: none; one connection, one thread.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping

from common.protocol.codec import Body

CONNECTING = "CONNECTING"
TLS_HANDSHAKING = "TLS_HANDSHAKING"
NEGOTIATING = "NEGOTIATING"
AUTHENTICATING = "AUTHENTICATING"
READY = "READY"
CLOSED = "CLOSED"

LEGAL_TRANSITIONS: dict[str, frozenset[str]] = {
    CONNECTING: frozenset({TLS_HANDSHAKING, NEGOTIATING, CLOSED}),
    TLS_HANDSHAKING: frozenset({NEGOTIATING, CLOSED}),
    NEGOTIATING: frozenset({AUTHENTICATING, READY, CLOSED}),
    AUTHENTICATING: frozenset({READY, CLOSED}),
    READY: frozenset({CLOSED}),
    CLOSED: frozenset(),
}
# Correlation ids are non-negative int32 values, wrapping.
CORRELATION_ID_MASK = 0x7FFFFFFF

# The decoded body (a generated Message, or a dict for an API the codec has not typed yet).
ResponseCallback = Callable[[Body | None, Exception | None], None]


class ConnectionStateError(Exception):
    """A transition or call the connection's state does not allow."""


class CorrelationMismatchError(ConnectionStateError):
    """A response whose correlation id is not the oldest in-flight request's."""


class InFlightRequest:
    __slots__ = ("api_key", "api_version", "callback", "correlation_id", "deadline_s")

    def __init__(
        self,
        correlation_id: int,
        api_key: int,
        api_version: int,
        callback: ResponseCallback,
        deadline_s: float,
    ) -> None:
        self.correlation_id = correlation_id
        self.api_key = api_key
        self.api_version = api_version
        self.callback = callback
        self.deadline_s = deadline_s


class ConnectionState:
    __slots__ = (
        "_connect_deadline_s",
        "_connect_timeout_s",
        "_next_correlation_id",
        "_request_timeout_s",
        "in_flight",
        "state",
        "versions",
    )

    def __init__(self, request_timeout_s: float, connect_timeout_s: float) -> None:
        self.state = CONNECTING
        self.versions: dict[int, int] = {}
        self.in_flight: deque[InFlightRequest] = deque()
        self._request_timeout_s = request_timeout_s
        self._connect_timeout_s = connect_timeout_s
        self._connect_deadline_s = 0.0
        self._next_correlation_id = 0

    def transition(self, new_state: str) -> None:
        if new_state not in LEGAL_TRANSITIONS[self.state]:
            raise ConnectionStateError(f"illegal transition {self.state} -> {new_state}")
        self.state = new_state

    def connect_started(self, now_s: float) -> None:
        if self.state is not CONNECTING:
            raise ConnectionStateError(f"connect in state {self.state}")
        self._connect_deadline_s = now_s + self._connect_timeout_s

    # --- versions -----------------------------------------------------------------------------

    def negotiate(
        self,
        client_versions: Mapping[int, tuple[int, int]],
        broker_versions: Mapping[int, tuple[int, int]],
    ) -> None:
        """Pick, per API, the highest version both sides speak (APIs with none are left out:
        they fail when first used)."""
        if self.state is not NEGOTIATING:
            raise ConnectionStateError(f"version negotiation in state {self.state}")
        for api_key, (lo, hi) in client_versions.items():
            theirs = broker_versions.get(api_key)
            if theirs is not None and max(lo, theirs[0]) <= min(hi, theirs[1]):
                self.versions[api_key] = min(hi, theirs[1])

    # --- requests -----------------------------------------------------------------------------

    def next_correlation_id(self) -> int:
        correlation_id = self._next_correlation_id
        self._next_correlation_id = (correlation_id + 1) & CORRELATION_ID_MASK
        return correlation_id

    def track(
        self,
        correlation_id: int,
        api_key: int,
        api_version: int,
        callback: ResponseCallback,
        now_s: float,
        timeout_s: float | None = None,
    ) -> None:
        """A request that expects a response was queued; it times out after ``timeout_s``
        (default: request.timeout.ms)."""
        if self.state is CLOSED:
            raise ConnectionStateError("no request on a closed connection")
        timeout = self._request_timeout_s if timeout_s is None else timeout_s
        self.in_flight.append(
            InFlightRequest(correlation_id, api_key, api_version, callback, now_s + timeout)
        )

    def oldest(self) -> InFlightRequest | None:
        """The request the next response answers (None: a response nobody asked for)."""
        return self.in_flight[0] if self.in_flight else None

    def complete(self, correlation_id: int) -> InFlightRequest:
        """A response with ``correlation_id`` arrived: remove and return the oldest request.
        Raises :class:`CorrelationMismatchError` (the request is still removed: the stream is
        unusable) when the ids differ, ConnectionStateError when nothing is in flight."""
        if not self.in_flight:
            raise ConnectionStateError("a response nobody asked for")
        request = self.in_flight.popleft()
        if correlation_id != request.correlation_id:
            self.in_flight.appendleft(request)
            raise CorrelationMismatchError(
                f"answered correlation id {correlation_id}, expected {request.correlation_id}"
            )
        return request

    def expired(self, now_s: float) -> str | None:
        """What timed out at ``now_s``: "connect" (still connecting or handshaking), "request"
        (the oldest in-flight request), or None."""
        if self.state in (CONNECTING, TLS_HANDSHAKING):
            return "connect" if now_s >= self._connect_deadline_s else None
        if self.in_flight and now_s >= self.in_flight[0].deadline_s:
            return "request"
        return None

    def close(self) -> list[InFlightRequest]:
        """Move to CLOSED; returns the requests still in flight (to fail). Idempotent."""
        self.state = CLOSED
        pending = list(self.in_flight)
        self.in_flight.clear()
        return pending
