"""A minimal HTTP/1.1 server on asyncio streams, enough for Toxiproxy's JSON API.

Supports: request line + headers (at most ``max_header_bytes``), a body by Content-Length
(at most ``max_body_bytes``; chunked request bodies are refused with 411, as no Toxiproxy
client sends them), keep-alive (HTTP/1.1 default, ``Connection: close`` honoured), and
responses with Content-Length. One request at a time per connection (no pipelining needed:
clients wait for each answer). Malformed requests get a 400 and the connection is closed.

Thread-safety: everything runs on one event loop.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any

MAX_HEADER_BYTES = 64 * 1024
MAX_BODY_BYTES = 1024 * 1024
# An idle keep-alive connection is closed after this long, so abandoned clients do not pile up.
IDLE_TIMEOUT_S = 60.0


@dataclass(slots=True)
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass(slots=True)
class Response:
    status: int
    body: Any = None  # JSON-encodable; None = no body
    headers: dict[str, str] = field(default_factory=dict)


Handler = Callable[[Request], Awaitable[Response]]


class _BadRequest(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


async def _read_request(reader: asyncio.StreamReader) -> Request | None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as e:
        if e.partial.strip():
            raise _BadRequest(400, "incomplete request head") from None
        return None  # The client closed between requests.
    except asyncio.LimitOverrunError:
        raise _BadRequest(431, "request head too large") from None
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise _BadRequest(400, f"bad request line {lines[0][:100]!r}")
    method, target, _version = parts
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if not line:
            continue
        name, sep, value = line.partition(":")
        if not sep:
            raise _BadRequest(400, f"bad header line {line[:100]!r}")
        headers[name.strip().lower()] = value.strip()
    if "chunked" in headers.get("transfer-encoding", "").lower():
        raise _BadRequest(411, "chunked request bodies are not supported; send Content-Length")
    try:
        length = int(headers.get("content-length", "0"))
    except ValueError:
        raise _BadRequest(400, "bad Content-Length") from None
    if length < 0 or length > MAX_BODY_BYTES:
        raise _BadRequest(413, f"request body over {MAX_BODY_BYTES} bytes")
    try:
        body = await reader.readexactly(length) if length else b""
    except asyncio.IncompleteReadError:
        raise _BadRequest(400, "request body shorter than Content-Length") from None
    path = target.split("?", 1)[0]
    return Request(method.upper(), path, headers, body)


def _encode(response: Response, keep_alive: bool) -> bytes:
    reason = HTTPStatus(response.status).phrase
    if response.body is None or response.status == 204:
        payload = b""
    else:
        payload = (json.dumps(response.body) + "\n").encode()
    lines = [f"HTTP/1.1 {response.status} {reason}"]
    headers = {"Content-Type": "application/json", **response.headers}
    headers["Content-Length"] = str(len(payload))
    headers["Connection"] = "keep-alive" if keep_alive else "close"
    lines.extend(f"{k}: {v}" for k, v in headers.items())
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + payload


async def serve_connection(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, handler: Handler
) -> None:
    """Answer requests on one connection until the client closes or asks to."""
    try:
        while True:
            try:
                request = await asyncio.wait_for(_read_request(reader), IDLE_TIMEOUT_S)
            except _BadRequest as e:
                err = Response(e.status, {"error": str(e), "status": e.status})
                writer.write(_encode(err, keep_alive=False))
                await writer.drain()
                return
            except TimeoutError:
                return
            if request is None:
                return
            keep_alive = request.headers.get("connection", "").lower() != "close"
            response = await handler(request)
            writer.write(_encode(response, keep_alive))
            await writer.drain()
            if not keep_alive:
                return
    except (ConnectionError, OSError):
        return
    finally:
        writer.close()
