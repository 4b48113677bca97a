"""InterBrokerClients: requests from this broker to other brokers on the inter-broker listener,
one :class:`InterBrokerConnection` per destination, used one request at a time (an
``asyncio.Lock`` per destination, first come first served, so requests to one broker keep
their order).

Until :meth:`configure` names the listener (the server knows it once it starts) a call raises
ConnectionError. A failed call closes its connection; the next call reconnects, looking the
destination's endpoint up again in the metadata image.

Thread-safety: none; everything runs on the broker's event loop.
"""

from __future__ import annotations

import asyncio
import ssl
from typing import Any

from common.protocol.api_keys import ApiKey
from common.protocol.codec import Body
from common.protocol.message_base import Message
from data_plane.replication.inter_broker_connection import EndpointLookup, InterBrokerConnection


class InterBrokerClients:
    def __init__(self, broker_id: int, client_id: str, connect_timeout_ms: int) -> None:
        self.broker_id = broker_id
        self._client_id = client_id
        self._connect_timeout_ms = connect_timeout_ms
        self._endpoint: EndpointLookup | None = None
        self._listener_name = ""
        self._tls: ssl.SSLContext | None = None
        self._connections: dict[int, InterBrokerConnection] = {}
        self._locks: dict[int, asyncio.Lock] = {}

    def configure(
        self, endpoint: EndpointLookup, listener_name: str, tls: ssl.SSLContext | None
    ) -> None:
        self._endpoint = endpoint
        self._listener_name = listener_name
        self._tls = tls

    async def call(
        self,
        broker_id: int,
        api_key: ApiKey,
        version: int,
        body: dict[str, Any] | Message,
        timeout_s: float,
    ) -> Body:
        """One request to ``broker_id`` and its decoded response. Raises OSError,
        ConnectionError, TimeoutError, EOFError or ProtocolError."""
        if self._endpoint is None:
            raise ConnectionError("the inter-broker listener is not known yet")
        lock = self._locks.setdefault(broker_id, asyncio.Lock())
        async with lock:
            conn = self._connections.get(broker_id)
            if conn is None:
                conn = InterBrokerConnection(
                    broker_id,
                    self._endpoint,
                    listener_name=self._listener_name,
                    client_id=f"{self._client_id}-{self.broker_id}",
                    ssl_context=self._tls,
                    connect_timeout_ms=self._connect_timeout_ms,
                )
                self._connections[broker_id] = conn
            try:
                await conn.connect()
                return await conn.call(api_key, version, body, timeout_s)
            except BaseException:
                conn.close()
                raise

    def close(self) -> None:
        for conn in self._connections.values():
            conn.close()
        self._connections.clear()
