"""One client connection: frames in, responses out in request order, records by sendfile.

I/O model: a non-blocking socket driven by ``loop.add_reader`` / ``loop.add_writer`` (the
same code runs on asyncio's selector loop and on uvloop). Transports are not used because a
response's records must go out with ``os.sendfile`` on the socket itself, interleaved with the
encoded header bytes, which transports do not allow.

- Reading: each readable event reads up to ``RECV_CHUNK_BYTES``; :class:`FrameReader` yields
  whole frames and rejects a size prefix above ``socket.request.max.bytes`` before any of the
  body is buffered (the connection is then closed and logged; other connections go on).
- Order, back-pressure, muting and close-after are the sans-IO
  :class:`~data_plane.broker.request_pipeline.RequestPipeline`: every decoded request gets a
  slot in arrival order (sync handlers fill it at once, async ones (delayed fetch, acks=all,
  admin) when their task finishes) and responses leave strictly from the head; at most
  ``queued.max.requests`` are in flight, frames read beyond that wait undecoded (at most one
  read chunk's worth) and the socket is not read until responses drain. This class turns the
  pipeline's decisions into reader/writer registrations, handler tasks and bytes on the wire.
- Writing: encoded buffers go out with ``socket.sendmsg`` (gathered), file slices with
  ``os.sendfile`` straight from the segment file (or, with ``kraftlog.fetch.zero.copy.enable``
  false, ``os.pread`` + ``send``). A would-block registers a writer callback.
- Closing (peer gone, bad frame, unsupported API, handler failure): reader/writer callbacks
  removed, socket closed, every pending handler task cancelled (their ``finally`` blocks drop
  parked delayed operations), queues cleared. Nothing of the connection is left behind.

Thread-safety: everything runs on the server's event loop thread.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import os
import socket
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

from common.protocol.api_keys import ApiKey
from common.protocol.codec import (
    FileSliceLike,
    RequestHeader,
    ResponseFrame,
    api_label,
    decode_request,
    encode_response,
    unsupported_version_response,
)
from common.protocol.errors import (
    EncodeError,
    FrameTooLargeError,
    ProtocolError,
    UnsupportedVersionError,
)
from common.protocol.framing import FrameReader
from common.protocol.recv import recv_chunk
from common.protocol.topic_id_versions import TOPIC_ID_APIS
from common.record_batch import Buffer
from common.security.tls_socket import TlsSocket
from data_plane.broker.apis import CLOSE_CONNECTION, NO_RESPONSE, Handler, ProduceGate, Request
from data_plane.broker.handlers import advertised, handler_for
from data_plane.broker.handlers.api_versions import valid_software
from data_plane.broker.request_pipeline import RequestPipeline, ResponseSlot
from data_plane.broker.topic_ids import resolve_topic_ids
from data_plane.security.request_hooks import Plan, RequestHooks

if TYPE_CHECKING:
    from data_plane.broker.server import KafkaServer

logger = logging.getLogger(__name__)

# (api key, api version) -> handler or None. handler_for() rebuilds the advertised version
# table for every call (a loop over every API and an enum lookup); the table is fixed once
# the handlers module is imported, so each pair is looked up once per process. Bounded:
# keys and versions are int16 and only pairs that arrived are stored, at most
# _HANDLER_CACHE_MAX_ENTRIES (a peer sending random pairs gets uncached lookups past it).
_HANDLER_CACHE: dict[tuple[int, int], Handler | None] = {}
_HANDLER_CACHE_MAX_ENTRIES = 4096


def _handler(api_key: int, api_version: int) -> Handler | None:
    key = (api_key, api_version)
    try:
        return _HANDLER_CACHE[key]
    except KeyError:
        handler = handler_for(api_key, api_version)
        if len(_HANDLER_CACHE) < _HANDLER_CACHE_MAX_ENTRIES:
            _HANDLER_CACHE[key] = handler
        return handler


RECV_CHUNK_BYTES = 256 * 1024
# Largest number of buffers handed to one sendmsg call (IOV_MAX is 1024 on Linux).
MAX_IOV = 64
# Read+send fallback (zero copy off): bytes read from the segment per send.
READ_CHUNK_BYTES = 1024 * 1024

_BUFFER_TYPES = (bytes, bytearray, memoryview)


class _EndOfResponse:
    """Marks the end of one response's parts in the output queue."""


_END = _EndOfResponse()


class Connection:
    def __init__(
        self,
        server: KafkaServer,
        sock: socket.socket | TlsSocket,
        listener_name: str,
        peer: str,
        hooks: RequestHooks | None = None,
    ) -> None:
        self._server = server
        self._loop = server.loop
        self._apis = server.apis
        self._config = server.config
        self.sock = sock
        self.fd = sock.fileno()
        self.listener_name = listener_name
        self.peer = peer
        self.client_host = "/" + peer.rsplit(":", 1)[0]
        self._produce_gate = ProduceGate()
        # (name, version) the client gave in ApiVersions v3+, None before (or never).
        self.client_software: tuple[str, str] | None = None
        # (api key, version) pairs this connection used (the versions it negotiated).
        self._versions_seen: set[tuple[int, int]] = set()
        # Security (SASL, ACLs, quotas) and metrics around each request (docs/security.md).
        self._hooks = hooks
        if hooks is not None:
            hooks.bind_mute(self.mute)
        # TLS sockets cannot sendfile: the bytes would bypass encryption.
        self._zero_copy = self._config.fetch_zero_copy_enable and getattr(sock, "zero_copy", True)
        # Set for a plain TCP socket: writes may hold back partial frames (MSG_MORE, TCP_CORK;
        # see _write_out).
        self._plain_sock = sock if isinstance(sock, socket.socket) else None
        self._reader = FrameReader(self._config.socket_request_max_bytes)
        self._pipeline: RequestPipeline[bytes | memoryview, ResponseFrame] = RequestPipeline(
            self._config.queued_max_requests
        )
        self._drain_scheduled = False
        self._out: collections.deque[Any] = collections.deque()
        self._out_offset = 0  # bytes of _out[0] already sent
        self._reading = False
        self._writing = False
        self.closed = False
        self.tasks: set[asyncio.Task[None]] = set()
        self.last_active_s = time.monotonic()

    # --- lifecycle ----------------------------------------------------------------------------

    def start(self) -> None:
        self._resume_reading()

    @property
    def in_flight(self) -> int:
        return self._pipeline.in_flight

    @property
    def peak_in_flight(self) -> int:
        """Most requests in flight at once so far (bounded by queued.max.requests)."""
        return self._pipeline.peak_in_flight

    def close(self, reason: str = "") -> None:
        if self.closed:
            return
        self.closed = True
        if reason:
            logger.debug("connection %s closed: %s", self.peer, reason)
        if self._reading:
            self._loop.remove_reader(self.fd)
            self._reading = False
        if self._writing:
            self._loop.remove_writer(self.fd)
            self._writing = False
        try:
            self.sock.close()
        except OSError:
            pass
        for task in list(self.tasks):
            task.cancel()
        self.tasks.clear()
        self._pipeline.close()
        self._out.clear()
        self._server.forget(self)

    def _pause_reading(self) -> None:
        if self._reading:
            self._loop.remove_reader(self.fd)
            self._reading = False

    def _resume_reading(self) -> None:
        if not self._reading and not self.closed and self._pipeline.reading_allowed:
            self._loop.add_reader(self.fd, self._on_readable)
            self._reading = True

    # --- reading ------------------------------------------------------------------------------

    def _on_readable(self) -> None:
        try:
            self._read()
        except Exception:  # a bug here must cost this connection only, never the loop
            logger.exception("connection %s: read failed", self.peer)
            self.close("internal error")

    def _read(self) -> None:
        try:
            data = recv_chunk(self.sock, RECV_CHUNK_BYTES)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as e:
            self.close(f"recv failed: {e}")
            return
        if not data:
            self.close("peer closed")
            return
        self.last_active_s = time.monotonic()
        try:
            self._pipeline.frames_read(self._reader.feed(data))
        except FrameTooLargeError as e:
            logger.warning("connection %s: %s; closing it", self.peer, e)
            self.close("oversized frame")
            return
        except ProtocolError as e:
            logger.warning("connection %s: bad framing (%s); closing it", self.peer, e)
            self.close("bad framing")
            return
        self._dispatch_frames()
        self._pump()

    def _dispatch_frames(self) -> None:
        """Dispatch read frames while fewer than ``queued.max.requests`` are in flight; the
        rest wait (bounded by one read chunk) and the socket is not read meanwhile."""
        pipeline = self._pipeline
        while not self.closed:
            frame = pipeline.next_frame()
            if frame is None:
                break
            self._dispatch(frame)
        if pipeline.needs_pause:
            self._pause_reading()

    def _drain_frames(self) -> None:
        if self.closed:
            return
        try:
            self._dispatch_frames()
            self._pump()
        except Exception:
            logger.exception("connection %s: dispatch failed", self.peer)
            self.close("internal error")

    def _dispatch(self, frame: bytes | memoryview) -> None:
        slot = self._pipeline.open_slot()
        hooks = self._hooks
        if hooks is not None and hooks.expects_raw_token:
            reply = hooks.raw_token(frame)
            frame_out = None if reply is None else _raw_response(reply)
            self._resolve(slot, frame_out, close=reply is None)
            return
        try:
            header, body = decode_request(frame)
        except UnsupportedVersionError as e:
            self._unsupported(slot, e.header)
            return
        except ProtocolError as e:
            logger.warning("connection %s: malformed request (%s); closing it", self.peer, e)
            self._resolve(slot, None, close=True)
            return
        if header.api_key in TOPIC_ID_APIS:
            resolve_topic_ids(header.api_key, header.api_version, body, self._apis.image)
        plan: Plan | None = None
        if hooks is not None:
            plan = hooks.before(header, body, len(frame))
            if plan.close_now:
                self._resolve(slot, None, close=True)
                return
            if plan.reply is not None:
                self._complete(slot, header, plan.after(plan.reply))
                slot.close_after = slot.close_after or plan.close_after
                return
            body = plan.body
        handler = _handler(header.api_key, header.api_version)
        if handler is None:
            self._unsupported(slot, header)
            return
        if header.api_key == ApiKey.API_VERSIONS and valid_software(body):
            self._server.note_client_software(
                self, body.client_software_name, body.client_software_version
            )
        negotiated = (header.api_key, header.api_version)
        if negotiated not in self._versions_seen:
            # The version each client settled on, once per API and connection (DEBUG).
            self._versions_seen.add(negotiated)
            if logger.isEnabledFor(logging.DEBUG):
                logger.debug(
                    "connection %s (%s): %s v%d",
                    self.peer,
                    " ".join(self.client_software or ("unnamed client",)),
                    api_label(header.api_key),
                    header.api_version,
                )
        try:
            request = Request(
                header, body, self.listener_name, self.client_host, self._produce_gate
            )
            result = handler(self._apis, request)
            if plan is not None:
                result = (
                    _after_async(result, plan)
                    if asyncio.iscoroutine(result)
                    else plan.after(result)
                )
        except Exception:
            logger.exception("connection %s: handler for api %d failed", self.peer, header.api_key)
            self._resolve(slot, None, close=True)
            return
        if asyncio.iscoroutine(result):
            task = self._loop.create_task(self._finish(slot, header, result))
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)
        else:
            self._complete(slot, header, result)

    def mute(self, throttle_ms: int) -> None:
        """Stop reading from the client for ``throttle_ms`` (a quota was exceeded); a longer
        mute extends a running one."""
        if throttle_ms <= 0 or self.closed:
            return
        until = self._loop.time() + throttle_ms / 1000
        seq = self._pipeline.mute(until)
        if seq is None:
            return
        self._pause_reading()
        self._loop.call_at(until, self._unmute, seq)

    def _unmute(self, seq: int) -> None:
        if self.closed or not self._pipeline.unmute(seq):
            return  # a later, longer mute's own timer ends it
        try:
            self._flush()
        except Exception:
            logger.exception("connection %s: write failed", self.peer)
            self.close("internal error")

    def _unsupported(self, slot: ResponseSlot[ResponseFrame], header: RequestHeader) -> None:
        # Every current client probes ApiVersions at a newer version first: routine, DEBUG.
        level = logging.DEBUG if header.api_key == ApiKey.API_VERSIONS else logging.INFO
        logger.log(
            level,
            "connection %s: unsupported api key %d version %d",
            self.peer,
            header.api_key,
            header.api_version,
        )
        # Keyed by ApiKey, an int subclass, and only read by the codec; Mapping's key type is
        # invariant, so reading it as int keys has to be stated.
        versions = cast("Mapping[int, tuple[int, int]]", advertised())
        frame = unsupported_version_response(header, versions)
        # An ApiVersions probe at a newer version is answered and the client retries on the
        # same connection; for any other API the stream cannot continue.
        self._resolve(slot, frame, close=header.api_key != ApiKey.API_VERSIONS)

    async def _finish(
        self, slot: ResponseSlot[ResponseFrame], header: RequestHeader, coro: Any
    ) -> None:
        try:
            result = await coro
        except asyncio.CancelledError:
            raise
        except Exception:
            logger.exception("connection %s: handler for api %d failed", self.peer, header.api_key)
            self._resolve(slot, None, close=True)
        else:
            self._complete(slot, header, result)
        try:
            self._pump()
        except Exception:
            logger.exception("connection %s: write failed", self.peer)
            self.close("internal error")

    def _complete(
        self, slot: ResponseSlot[ResponseFrame], header: RequestHeader, result: Any
    ) -> None:
        if result is NO_RESPONSE:
            self._resolve(slot, None)
        elif result is CLOSE_CONNECTION:
            self._resolve(slot, None, close=True)
        else:
            try:
                frame = encode_response(header, result)
            except EncodeError:
                logger.exception("connection %s: cannot encode api %d", self.peer, header.api_key)
                self._resolve(slot, None, close=True)
                return
            self._resolve(slot, frame)

    def _resolve(
        self, slot: ResponseSlot[ResponseFrame], frame: ResponseFrame | None, close: bool = False
    ) -> None:
        self._pipeline.resolve(slot, frame, close)

    # --- writing ------------------------------------------------------------------------------

    def _pump(self) -> None:
        """Move finished responses from the head of the slot queue to the output, then write."""
        if self.closed:
            return
        frames, closing = self._pipeline.pop_responses()
        out = self._out
        for frame in frames:
            out.extend(frame.parts)
            out.append(_END)
        if closing:
            # Later requests are dropped: the client sees the connection close after the
            # answers it was owed up to this one.
            self._pause_reading()
            for task in list(self.tasks):
                task.cancel()
        self._flush()

    def _on_writable(self) -> None:
        try:
            self._flush()
        except Exception:  # e.g. a file slice whose segment was closed under it
            logger.exception("connection %s: write failed", self.peer)
            self.close("internal error")

    def _flush(self) -> None:
        try:
            self._write_out()
        except OSError as e:
            self.close(f"send failed: {e}")
            return
        if self.closed:
            return
        if self._out:
            if not self._writing:
                self._loop.add_writer(self.fd, self._on_writable)
                self._writing = True
            return
        if self._writing:
            self._loop.remove_writer(self.fd)
            self._writing = False
        pipeline = self._pipeline
        if pipeline.closing:
            self.close("closed after its last response")
        elif pipeline.in_flight < pipeline.max_in_flight:
            if pipeline.waiting_frames:
                # Frames read earlier wait for room; dispatch them from a fresh callback, not
                # from inside this write path.
                if not self._drain_scheduled:
                    self._drain_scheduled = True
                    self._loop.call_soon(self._scheduled_drain)
            else:
                self._resume_reading()

    def _scheduled_drain(self) -> None:
        self._drain_scheduled = False
        self._drain_frames()

    def _write_out(self) -> None:
        """Write as much of ``_out`` as the socket takes; return on would-block.

        Every part but the last of what is queued goes out with MSG_MORE (a file slice that
        something follows: under TCP_CORK, lifted before returning), so a response of header
        buffers and a segment slice leaves as one push, not one per part. Why: on loopback the
        sender's syscall runs the receiver's TCP input and wakes it; a push per part costs
        the broker that work again and wakes the client for a partial frame it can only
        buffer (measured: a follower Fetch answer was a sendmsg of the header, then a
        sendfile of the records, and each woke the follower)."""
        out = self._out
        plain_sock = self._plain_sock
        corked = False
        try:
            while out:
                head = out[0]
                if head is _END:
                    out.popleft()
                    self._pipeline.response_sent()
                    self.last_active_s = time.monotonic()
                    continue
                if isinstance(head, _BUFFER_TYPES):
                    bufs: list[Buffer] = []
                    for part in out:
                        if not isinstance(part, _BUFFER_TYPES) or len(bufs) == MAX_IOV:
                            break
                        bufs.append(part)
                    if self._out_offset:
                        bufs[0] = memoryview(bufs[0])[self._out_offset :]
                    try:
                        if plain_sock is not None and _more_after(out, len(bufs)):
                            sent = plain_sock.sendmsg(bufs, (), socket.MSG_MORE)
                        else:
                            sent = self.sock.sendmsg(bufs)
                    except (BlockingIOError, InterruptedError):
                        return
                    self._consume_buffers(sent)
                    continue
                remaining = head.length - self._out_offset
                if remaining <= 0:
                    out.popleft()
                    self._out_offset = 0
                    continue
                if not corked and plain_sock is not None and _more_after(out, 1):
                    plain_sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, 1)
                    corked = True
                try:
                    sent = self._send_slice(head, remaining)
                except (BlockingIOError, InterruptedError):
                    return
                if sent == 0:
                    # The segment shrank under the slice (truncation): the frame cannot be
                    # completed, and a short frame would desynchronise the client.
                    raise OSError(f"file slice of {head.length} bytes ended early")
                self._out_offset += sent
        finally:
            if corked and not self.closed:
                self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, 0)

    def _send_slice(self, head: FileSliceLike, remaining: int) -> int:
        if self._zero_copy:
            return os.sendfile(self.fd, head.fileno, head.position + self._out_offset, remaining)
        return self._read_and_send(head, remaining)

    def _read_and_send(self, head: FileSliceLike, remaining: int) -> int:
        data = os.pread(
            head.fileno, min(remaining, READ_CHUNK_BYTES), head.position + self._out_offset
        )
        if not data:
            return 0
        return self.sock.send(data)

    def _consume_buffers(self, sent: int) -> None:
        out = self._out
        while sent > 0:
            head = out[0]
            left = len(head) - self._out_offset
            if sent >= left:
                sent -= left
                out.popleft()
                self._out_offset = 0
            else:
                self._out_offset += sent
                sent = 0
        # Zero-length buffers at the head carry nothing; drop them so the loop moves on.
        while out and isinstance(out[0], _BUFFER_TYPES) and len(out[0]) == 0:
            out.popleft()


def _more_after(out: collections.deque[Any], start: int) -> bool:
    """Whether bytes follow the first ``start`` parts of ``out``. End markers and empty
    parts carry none: an empty segment slice (a consumer's partition with nothing below its
    high watermark) ends many Fetch answers, and counting it as more would leave the bytes
    before it held back by MSG_MORE with nothing coming to push them."""
    for i in range(start, len(out)):
        part = out[i]
        if part is _END:
            continue
        if (len(part) if isinstance(part, _BUFFER_TYPES) else part.length) > 0:
            return True
    return False


async def _after_async(coro: Any, plan: Plan) -> Any:
    return plan.after(await coro)


def _raw_response(data: bytes) -> ResponseFrame:
    """A bare SASL token reply (handshake v0): not a Kafka response."""
    return ResponseFrame([data], len(data))
