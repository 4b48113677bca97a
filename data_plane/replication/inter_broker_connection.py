"""InterBrokerConnection: one Kafka-protocol connection from this broker to another (the
replica fetcher's Fetch and OffsetForLeaderEpoch, the transaction marker sender's
WriteTxnMarkers), on the inter-broker listener, TLS when that listener is SSL.

One request at a time: :meth:`call` writes a request and reads exactly its response frame
(a second frame, or a wrong correlation id, is a :class:`ProtocolError`). The endpoint is
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

from data_plane.protocol.api_keys import ApiKey
from data_plane.protocol.codec import decode_response, encode_request
from data_plane.protocol.errors import ProtocolError
from data_plane.protocol.framing import FrameReader

# Socket reads of a response (a large fetch answer comes in many of these).
READ_CHUNK_BYTES = 256 * 1024
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
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._frames = FrameReader(MAX_RESPONSE_FRAME_BYTES)
        self._correlation = itertools.count(1)

    async def connect(self) -> None:
        """Open the connection if it is not open; raises ConnectionError, OSError or
        TimeoutError."""
        if self._writer is not None:
            return
        address = self._endpoint(self.destination_broker_id, self._listener_name)
        if address is None:
            raise ConnectionError(f"no endpoint for broker {self.destination_broker_id}")
        tls = self._tls
        self._reader, self._writer = await asyncio.wait_for(
            asyncio.open_connection(
                address[0],
                address[1],
                ssl=tls,
                server_hostname=address[0] if tls is not None else None,
            ),
            self._connect_timeout_s,
        )
        self._frames = FrameReader(MAX_RESPONSE_FRAME_BYTES)

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
        self._reader = self._writer = None

    async def call(
        self, api_key: ApiKey, version: int, body: dict[str, Any], timeout_s: float
    ) -> dict[str, Any]:
        """Send one request and return its decoded response body."""
        if self._writer is None or self._reader is None:
            raise ConnectionError("not connected")
        correlation_id = next(self._correlation)
        self._writer.write(encode_request(api_key, version, correlation_id, self._client_id, body))
        frame = await asyncio.wait_for(self._read_frame(), timeout_s)
        got, decoded = decode_response(api_key, version, frame)
        if got != correlation_id:
            raise ProtocolError(f"correlation id {got}, expected {correlation_id}")
        return decoded

    async def _read_frame(self) -> bytes | memoryview:
        reader = self._reader
        if reader is None:
            raise ConnectionError("not connected")
        while True:
            chunk = await reader.read(READ_CHUNK_BYTES)
            if not chunk:
                raise EOFError(f"connection closed by broker {self.destination_broker_id}")
            frames = self._frames.feed(chunk)
            if frames:
                if len(frames) > 1:
                    raise ProtocolError("more than one response frame for one request")
                return frames[0]
