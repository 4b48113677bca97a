"""TLS for the broker's non-blocking connections: the accept-side handshake and a socket
adapter with plain-socket semantics.

:func:`tls_handshake` wraps an accepted non-blocking socket (``server_side``,
``do_handshake_on_connect=False``) and drives ``do_handshake`` from the event loop's
reader/writer callbacks, bounded by ``timeout_ms``. A failure (untrusted or expired client
certificate, plaintext client on a TLS port, timeout) raises :class:`TlsHandshakeError` with a
reason for the log; the caller closes the socket and keeps serving.

:class:`TlsSocket` lets the connection layer keep its plain-socket code:

- ``recv(n)``: reads whole TLS records until the socket has nothing more (each read asks for
  at least one full record, :data:`TLS_RECORD_MAX_BYTES`, so no decrypted bytes stay buffered
  inside OpenSSL where the selector cannot see them). SSLWantRead/Write become
  BlockingIOError, as for a plain non-blocking socket.
- ``sendmsg(buffers)``: TLS has no gather write; the buffers are joined (up to
  :data:`MAX_JOIN_BYTES`) and sent with one ``send``; a retried send after would-block repeats
  the same bytes, as OpenSSL requires.
- There is no ``sendfile``: the connection must not use ``os.sendfile`` on a TLS socket (the
  bytes would bypass encryption); :attr:`TlsSocket.zero_copy` is False.

Thread-safety: used by the event loop thread only.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
from collections.abc import Sequence
from typing import Any

# Largest TLS record payload (RFC 8446 section 5.1).
TLS_RECORD_MAX_BYTES = 16 * 1024
# Most plaintext bytes one recv() call returns (it reads whole records).
MAX_RECV_BYTES = 1024 * 1024
# Most bytes joined for one TLS send.
MAX_JOIN_BYTES = 256 * 1024
DEFAULT_HANDSHAKE_TIMEOUT_MS = 10_000


class TlsHandshakeError(Exception):
    """The TLS handshake with a client failed; the message says why (no secrets)."""


async def tls_handshake(
    loop: asyncio.AbstractEventLoop,
    sock: socket.socket,
    context: ssl.SSLContext,
    *,
    timeout_ms: int = DEFAULT_HANDSHAKE_TIMEOUT_MS,
) -> ssl.SSLSocket:
    """The server side of a TLS handshake on a non-blocking accepted socket. On failure the
    TLS socket is closed (and with it ``sock``) and TlsHandshakeError raised."""
    tls = context.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
    fd = tls.fileno()
    deadline = loop.time() + timeout_ms / 1000
    try:
        while True:
            try:
                tls.do_handshake()
                return tls
            except ssl.SSLWantReadError:
                waiter = _wait(loop, fd, readable=True)
            except ssl.SSLWantWriteError:
                waiter = _wait(loop, fd, readable=False)
            except ssl.SSLCertVerificationError as exc:
                raise TlsHandshakeError(
                    f"client certificate refused: {exc.verify_message}"
                ) from None
            except ssl.SSLError as exc:
                raise TlsHandshakeError(f"TLS handshake failed: {exc.reason or exc}") from None
            except OSError as exc:
                raise TlsHandshakeError(
                    f"connection lost during the TLS handshake: {exc}"
                ) from None
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise TlsHandshakeError(f"no TLS handshake within {timeout_ms} ms")
            try:
                await asyncio.wait_for(waiter, remaining)
            except TimeoutError:
                raise TlsHandshakeError(f"no TLS handshake within {timeout_ms} ms") from None
    except BaseException:
        tls.close()
        raise


def _wait(loop: asyncio.AbstractEventLoop, fd: int, *, readable: bool) -> asyncio.Future[None]:
    future: asyncio.Future[None] = loop.create_future()
    add, remove = (
        (loop.add_reader, loop.remove_reader) if readable else (loop.add_writer, loop.remove_writer)
    )

    def ready() -> None:
        if not future.done():
            future.set_result(None)

    add(fd, ready)
    future.add_done_callback(lambda _f: remove(fd))
    return future


class TlsSocket:
    """Plain-socket semantics over an established non-blocking ``ssl.SSLSocket``."""

    zero_copy = False

    def __init__(self, tls: ssl.SSLSocket) -> None:
        self._tls = tls

    def fileno(self) -> int:
        return self._tls.fileno()

    def getpeercert(self) -> dict[str, Any] | None:
        cert = self._tls.getpeercert()
        return cert or None

    def recv(self, max_bytes: int) -> bytes:
        limit = min(max(max_bytes, TLS_RECORD_MAX_BYTES), MAX_RECV_BYTES)
        chunks: list[bytes] = []
        total = 0
        while total < limit:
            try:
                data = self._tls.recv(max(limit - total, TLS_RECORD_MAX_BYTES))
            except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
                if chunks:
                    break
                raise BlockingIOError("TLS: no whole record available") from None
            except ssl.SSLZeroReturnError:
                break  # the peer sent close_notify: end of stream
            if not data:
                break
            chunks.append(data)
            total += len(data)
        return b"".join(chunks)

    def send(self, data: bytes | bytearray | memoryview) -> int:
        try:
            return self._tls.send(data)
        except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
            raise BlockingIOError("TLS: send would block") from None

    def sendmsg(self, buffers: Sequence[bytes | bytearray | memoryview]) -> int:
        joined = bytearray()
        for buf in buffers:
            if joined and len(joined) + len(buf) > MAX_JOIN_BYTES:
                break
            joined += buf
        return self.send(joined)

    def setsockopt(self, *args: Any) -> None:
        self._tls.setsockopt(*args)

    def close(self) -> None:
        self._tls.close()
