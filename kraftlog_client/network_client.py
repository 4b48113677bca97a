"""The client's I/O multiplexer: broker connections on one selector, driven by one thread.

:class:`NetworkClient` owns one :class:`BrokerConnection` per broker (bootstrap addresses get
negative node ids until the first Metadata response names the brokers), connects lazily,
pipelines requests up to ``max_in_flight`` per connection, and delivers responses by calling
each request's callback from :meth:`poll`. It also keeps the :class:`ClusterMetadata` cache
fresh: :meth:`maybe_update_metadata` sends a Metadata request when one is due.

:meth:`request` is the blocking convenience used by the consumer and admin client: send, then
poll until that response arrives or ``timeout_ms`` passes.

Thread-safety: every method must be called from the owning thread, except :meth:`wakeup`,
which any thread may call to end a blocked :meth:`poll` early.
"""

from __future__ import annotations

import selectors
import socket
import time
from collections.abc import Callable
from typing import Any

from common.protocol.api_keys import ApiKey
from common.protocol.codec import Body
from common.protocol.message_base import Message
from common.protocol.messages.find_coordinator import FindCoordinatorResponse
from kraftlog_client.broker_connection import (
    CLOSED,
    CONNECTING,
    READY,
    BrokerConnection,
)
from kraftlog_client.client_security import client_security
from kraftlog_client.config import CommonClientConfig
from kraftlog_client.connection_state import ResponseCallback
from kraftlog_client.errors import KafkaConnectionError, KafkaError, KafkaTimeoutError
from kraftlog_client.metadata import ClusterMetadata

Clock = Callable[[], float]


def parse_bootstrap(servers: tuple[str, ...] | list[str]) -> list[tuple[str, int]]:
    out = []
    for entry in servers:
        host, sep, port = entry.strip().rpartition(":")
        if not sep or not host or not port.isdigit():
            raise ValueError(f"bootstrap.servers entry {entry!r} is not host:port")
        out.append((host.strip("[]"), int(port)))
    if not out:
        raise ValueError("bootstrap.servers is empty")
    return out


class NetworkClient:
    def __init__(
        self,
        config: CommonClientConfig,
        *,
        max_in_flight: int = 5,
        clock: Clock = time.monotonic,
    ) -> None:
        self._bootstrap = parse_bootstrap(config.bootstrap_servers)  # first: it may raise
        self._config = config
        self._security = client_security(config)
        # Set when a broker refused our credentials: fatal, never retried.
        self.auth_error: KafkaError | None = None
        self._max_in_flight = max_in_flight
        self._clock = clock
        self._selector = selectors.DefaultSelector()
        self._connections: dict[int, BrokerConnection] = {}
        self._reconnect_after_s: dict[int, float] = {}
        self.metadata = ClusterMetadata(config.metadata_max_age_ms, config.retry_backoff_ms)
        self._metadata_in_flight = False
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._selector.register(self._wake_r, selectors.EVENT_READ, None)
        # Set while poll() may block in select and no wakeup byte is pending: wakeup() writes
        # only then (a socket write per send() batch would cost more than the batch).
        # ``_wakeup_pending`` makes a wakeup that comes while poll() is not blocked count for
        # the next poll(), which then does not block: without it, a record appended between
        # the sender's drain and its select waited for the select to time out.
        self._wakeable = False
        self._wakeup_pending = False
        self._closed = False

    # -- connections ---------------------------------------------------------------------

    def _address(self, node_id: int) -> tuple[str, int] | None:
        if node_id < 0:
            index = -node_id - 1
            return self._bootstrap[index] if index < len(self._bootstrap) else None
        info = self.metadata.broker(node_id)
        return (info.host, info.port) if info is not None else None

    def _connection(self, node_id: int) -> BrokerConnection | None:
        """The live connection to ``node_id``, starting one if needed (after backoff)."""
        conn = self._connections.get(node_id)
        if conn is not None and conn.state is not CLOSED:
            return conn
        now = self._clock()
        if self.auth_error is not None or now < self._reconnect_after_s.get(node_id, 0.0):
            return None
        address = self._address(node_id)
        if address is None:
            return None
        c = self._config
        conn = BrokerConnection(
            node_id,
            address[0],
            address[1],
            client_id=c.client_id,
            request_timeout_ms=c.request_timeout_ms,
            connect_timeout_ms=c.socket_connection_setup_timeout_ms,
            send_buffer_bytes=c.send_buffer_bytes,
            receive_buffer_bytes=c.receive_buffer_bytes,
            security=self._security,
        )
        self._connections[node_id] = conn
        conn.connect(now)
        if conn.state is CLOSED or conn.sock is None:
            self._reconnect_after_s[node_id] = now + c.retry_backoff_ms / 1000.0
            return None
        self._selector.register(conn.sock, selectors.EVENT_WRITE, conn)
        return conn

    def is_ready(self, node_id: int) -> bool:
        """Connected, negotiated, and below the in-flight bound (starts connecting if not)."""
        conn = self._connection(node_id)
        return (
            conn is not None and conn.state is READY and len(conn.in_flight) < self._max_in_flight
        )

    def any_ready_node(self) -> int | None:
        """A READY node with the fewest in-flight requests; starts connections otherwise."""
        best: tuple[int, int] | None = None
        for node_id, conn in self._connections.items():
            if conn.state is READY and (best is None or len(conn.in_flight) < best[0]):
                best = (len(conn.in_flight), node_id)
        if best is not None:
            return best[1]
        candidates = list(self.metadata.brokers) or [-(i + 1) for i in range(len(self._bootstrap))]
        for node_id in candidates:
            self._connection(node_id)
        if self.metadata.brokers:
            # Known brokers may all be down: fall back to the bootstrap list too.
            for i in range(len(self._bootstrap)):
                self._connection(-(i + 1))
        return None

    def version_for(self, node_id: int, api_key: int) -> int:
        conn = self._connections.get(node_id)
        if conn is None or conn.state is not READY:
            raise KafkaConnectionError(f"no ready connection to broker {node_id}")
        return conn.version_for(api_key)

    # -- requests ------------------------------------------------------------------------

    def send(
        self,
        node_id: int,
        api_key: int,
        body: dict[str, Any] | Message,
        callback: ResponseCallback,
        *,
        expect_response: bool = True,
        timeout_ms: float | None = None,
    ) -> None:
        """Queue a request on a READY connection (check :meth:`is_ready` first);
        ``timeout_ms`` overrides request.timeout.ms for this one request."""
        conn = self._connections.get(node_id)
        if conn is None or conn.state is not READY:
            raise KafkaConnectionError(f"no ready connection to broker {node_id}")
        if api_key == ApiKey.FIND_COORDINATOR:
            callback = self._learning_coordinator(callback)
        conn.send(
            api_key,
            body,
            callback,
            self._clock(),
            expect_response=expect_response,
            timeout_ms=timeout_ms,
        )
        conn.write()
        self._update_interest(conn)

    def _learning_coordinator(self, callback: ResponseCallback) -> ResponseCallback:
        """Wrap a FindCoordinator callback so the coordinator's address is known before the
        caller connects to it: a client that never asked for metadata (an assign()-only
        consumer, a producer before its first send) has no address for that node yet."""

        def wrapped(body: FindCoordinatorResponse | None, error: Exception | None) -> None:
            found = error is None and body is not None and body.error_code == 0
            if found and body is not None and body.node_id >= 0 and body.host:
                self.metadata.add_broker(body.node_id, body.host, body.port)
            callback(body, error)

        return wrapped

    def request(
        self, node_id: int | None, api_key: int, body: dict[str, Any] | Message, timeout_ms: float
    ) -> Body:
        """Send one request (to any ready broker when ``node_id`` is None) and wait for the
        answer. Raises :class:`KafkaTimeoutError` or the connection's error."""
        deadline = self._clock() + timeout_ms / 1000.0
        while True:
            if self.auth_error is not None:
                raise self.auth_error
            target = self.any_ready_node() if node_id is None else node_id
            if target is not None and self.is_ready(target):
                break
            remaining = deadline - self._clock()
            if remaining <= 0:
                raise KafkaTimeoutError(
                    f"no connection to {'any broker' if node_id is None else node_id} "
                    f"within {timeout_ms:.0f} ms"
                )
            self.poll(min(remaining, 0.1))
        box: list[tuple[Body | None, Exception | None]] = []
        self.send(target, api_key, body, lambda b, e: box.append((b, e)))
        while not box:
            remaining = deadline - self._clock()
            if remaining <= 0:
                raise KafkaTimeoutError(f"{ApiKey(api_key).name} got no answer in {timeout_ms} ms")
            self.poll(remaining)
        response, error = box[0]
        if error is not None:
            raise error
        if response is None:
            raise KafkaConnectionError("request failed without an error")
        return response

    # -- metadata ------------------------------------------------------------------------

    def maybe_update_metadata(self) -> float:
        """Send a Metadata request if one is due; returns ms until the next check."""
        now_ms = self._clock() * 1000.0
        if self._metadata_in_flight:
            return float(self._config.request_timeout_ms)
        wait_ms = self.metadata.time_to_next_update_ms(now_ms)
        if wait_ms > 0:
            return wait_ms
        node = self.any_ready_node()
        if node is None:
            return float(self._config.retry_backoff_ms)
        self.metadata.mark_attempt(now_ms)
        self._metadata_in_flight = True
        self.send(node, ApiKey.METADATA, self.metadata.request_body(), self._on_metadata)
        return float(self._config.request_timeout_ms)

    def _on_metadata(self, body: dict[str, Any] | None, error: Exception | None) -> None:
        self._metadata_in_flight = False
        if body is not None and error is None:
            self.metadata.update(body, self._clock() * 1000.0)

    def fetch_metadata(self, topics: list[str] | None, timeout_ms: float) -> Body:
        """A blocking Metadata request (all topics when ``topics`` is None); updates the cache
        with the answer."""
        body = {
            "topics": None if topics is None else [{"name": t} for t in topics],
            "allow_auto_topic_creation": False,
        }
        response = self.request(None, ApiKey.METADATA, body, timeout_ms)
        self.metadata.update(response, self._clock() * 1000.0, all_topics=topics is None)
        return response

    # -- the loop ------------------------------------------------------------------------

    def poll(self, timeout_s: float) -> None:
        """Wait up to ``timeout_s`` for socket events and handle them (callbacks run here)."""
        if self._closed:
            raise KafkaError(-1, "network client closed")
        # Order matters (wakeup() does the mirror image): announce the blocking select first,
        # then look for a wakeup that came before it.
        self._wakeable = timeout_s > 0
        if self._wakeup_pending:
            timeout_s = 0.0
        events = self._selector.select(max(0.0, timeout_s))
        self._wakeable = False
        self._wakeup_pending = False
        now = self._clock()
        for key, mask in events:
            conn = key.data
            if conn is None:
                self._drain_wakeups()
                continue
            if conn.state is CONNECTING:
                if mask & selectors.EVENT_WRITE:
                    conn.finish_connect(now)
            else:
                if mask & selectors.EVENT_READ:
                    conn.read()
                if mask & selectors.EVENT_WRITE and conn.state is not CLOSED:
                    conn.write()
            self._update_interest(conn)
        for conn in list(self._connections.values()):
            if conn.state is not CLOSED:
                conn.check_timeouts(now)
                if conn.state is CLOSED:
                    self._update_interest(conn)

    def _update_interest(self, conn: BrokerConnection) -> None:
        if conn.state is CLOSED:
            self._forget(conn)
            return
        if conn.sock is None:
            return
        if conn.state is CONNECTING:
            mask = selectors.EVENT_WRITE
        else:
            mask = selectors.EVENT_READ
            if conn.has_pending_writes:
                mask |= selectors.EVENT_WRITE
        key = self._selector.get_map().get(conn.sock)
        if key is None:
            return
        if key.events != mask:
            self._selector.modify(conn.sock, mask, conn)

    def _forget(self, conn: BrokerConnection) -> None:
        if conn.sock is not None:
            try:
                self._selector.unregister(conn.sock)
            except (KeyError, ValueError):
                pass
        if conn.auth_failed and self.auth_error is None and isinstance(conn.error, KafkaError):
            self.auth_error = conn.error
        if self._connections.get(conn.node_id) is conn:
            self._reconnect_after_s[conn.node_id] = (
                self._clock() + self._config.retry_backoff_ms / 1000.0
            )
            # The broker may be gone for good: learn the current leaders.
            self.metadata.request_update()

    def disconnect(self, node_id: int, error: Exception | None = None) -> None:
        conn = self._connections.get(node_id)
        if conn is not None:
            conn.close(error)
            self._forget(conn)

    def wakeup(self) -> None:
        """End a blocked :meth:`poll`, or make the next one return at once (any thread)."""
        self._wakeup_pending = True
        if not self._wakeable:
            return
        self._wakeable = False
        try:
            self._wake_w.send(b"\x00")
        except (BlockingIOError, OSError):
            pass  # a wakeup is pending already, or we are closing

    def _drain_wakeups(self) -> None:
        try:
            while self._wake_r.recv(4096):
                pass
        except (BlockingIOError, OSError):
            pass

    def close(self) -> None:
        if self._closed:
            return
        for conn in list(self._connections.values()):
            conn.close(KafkaConnectionError("client closed"))
            self._forget(conn)
        self._connections.clear()
        self._selector.close()
        self._wake_r.close()
        self._wake_w.close()
        self._closed = True
