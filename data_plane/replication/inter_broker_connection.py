"""InterBrokerConnection: one Kafka-protocol connection from this broker to another (the
replica fetcher's Fetch and OffsetForLeaderEpoch, the transaction marker sender's
WriteTxnMarkers), on the inter-broker listener, TLS when that listener is SSL.

One request at a time: :meth:`call` writes a request and reads exactly its response frame
(a second frame, or a wrong correlation id, is a :class:`ProtocolError`); responses are
received straight into one buffer each (:class:`ResponseFrames`). The endpoint is
looked up in the metadata image at each connect, so a restarted broker on a new port is
found. Any error leaves the connection to be closed by the caller (:meth:`close`).

Thread-safety: none; used from one task on the broker's event loop.
"""

from __future__ import annotations

import asyncio
import itertools
import ssl
from collections.abc import Callable
from typing import Any

from common.protocol.api_keys import ApiKey
from common.protocol.codec import Body, decode_response, encode_request
from common.protocol.errors import ProtocolError
from common.protocol.message_base import Message
from data_plane.replication.response_frames import ResponseFrames

# Largest response frame accepted (replica.fetch.response.max.bytes is 10 MiB by default, and
# a leader's answer may exceed it by one whole batch per partition).
MAX_RESPONSE_FRAME_BYTES = 256 * 1024 * 1024

# broker id, listener name -> (host, port), or None when the broker or listener is unknown.
EndpointLookup = Callable[[int, str], tuple[str, int] | None]


class InterBrokerConnection:
    def __init__(
        self,
        destination_broker_id: int,
        endpoint: EndpointLookup,
        *,
        listener_name: str,
        client_id: str,
        ssl_context: ssl.SSLContext | None = None,
        connect_timeout_ms: int = 30_000,
    ) -> None:
        self.destination_broker_id = destination_broker_id
        self._endpoint = endpoint
        self._listener_name = listener_name
        self._client_id = client_id
        self._tls = ssl_context
        self._connect_timeout_s = connect_timeout_ms / 1000
        self._transport: asyncio.Transport | None = None
        self._frames: ResponseFrames | None = None
        self._correlation = itertools.count(1)

    async def connect(self) -> None:
        """Open the connection if it is not open; raises ConnectionError, OSError or
        TimeoutError."""
        if self._transport is not None:
            return
        address = self._endpoint(self.destination_broker_id, self._listener_name)
        if address is None:
            raise ConnectionError(f"no endpoint for broker {self.destination_broker_id}")
        tls = self._tls
        peer = f"broker {self.destination_broker_id}"
        transport, frames = await asyncio.wait_for(
            asyncio.get_running_loop().create_connection(
                lambda: ResponseFrames(MAX_RESPONSE_FRAME_BYTES, peer),
                address[0],
                address[1],
                ssl=tls,
                server_hostname=address[0] if tls is not None else None,
            ),
            self._connect_timeout_s,
        )
        self._transport, self._frames = transport, frames

    def close(self) -> None:
        if self._transport is not None:
            self._transport.close()
        self._transport = self._frames = None

    async def call(
        self, api_key: ApiKey, version: int, body: dict[str, Any] | Message, timeout_s: float
    ) -> Body:
        """Send one request and return its decoded response body."""
        transport, frames = self._transport, self._frames
        if transport is None or frames is None or transport.is_closing():
            raise ConnectionError("not connected")
        if frames.pending:
            raise ProtocolError("a response frame arrived without a request")
        correlation_id = next(self._correlation)
        transport.write(encode_request(api_key, version, correlation_id, self._client_id, body))
        frame = await frames.next_frame(timeout_s)
        if frames.pending:
            raise ProtocolError("more than one response frame for one request")
        got, decoded = decode_response(api_key, version, frame)
        if got != correlation_id:
            raise ProtocolError(f"correlation id {got}, expected {correlation_id}")
        return decoded
