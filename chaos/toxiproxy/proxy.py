"""One proxy: a TCP listener forwarding each accepted connection to its upstream, through the
proxy's toxics (chaos.toxiproxy.toxics for their semantics).

Per accepted connection the proxy opens one upstream connection and runs two pumps:
upstream (client -> server) and downstream (server -> client). A pump reads a chunk of at
most ``read_chunk_bytes``, passes it through its :class:`ToxicChain` and queues the resulting
timed actions; a writer carries them out in FIFO order at their times. The pump stops reading
while more than ``max_buffered_bytes`` wait in its queue, so a slow or delayed link pushes
back on the sender through TCP instead of growing memory.

- EOF on one side is passed on as a half-close of the other (after the queued data), and the
  connection is closed once both directions ended; an error on either socket closes both.
- A :class:`Close` action (limit_data, timeout, reset_peer) closes both sockets at once;
  ``reset`` sets SO_LINGER 0 first so both peers see a TCP RST (ECONNRESET).
- Adding, updating or removing a toxic applies to the open connections too, as in
  Toxiproxy. Removing one releases the data the direction's toxics were holding at once.
- Disabling the proxy closes the listener (new connections are refused) and aborts every
  open connection (data not yet handed to the kernel is dropped); enabling binds the same
  address again.

Thread-safety: all methods run on the event loop of the server that owns the proxy.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import random
import socket
import struct
from collections.abc import Awaitable, Callable
from typing import Any

from chaos.toxiproxy.toxics import (
    DOWNSTREAM,
    UPSTREAM,
    Action,
    Close,
    Emit,
    Eof,
    ToxicChain,
    ToxicError,
    ToxicSpec,
)

logger = logging.getLogger(__name__)

READ_CHUNK_BYTES = 64 * 1024
MAX_BUFFERED_BYTES = 4 * 1024 * 1024
MAX_CONNECTIONS = 1024
UPSTREAM_CONNECT_TIMEOUT_S = 5.0
# How long stop() waits for the accept handlers to finish after closing their connections.
STOP_WAIT_S = 5.0


def split_address(address: str) -> tuple[str, int]:
    """``host:port`` (``[v6]:port`` allowed; empty host = all interfaces) to a pair.
    Raises ValueError with a message naming the address."""
    host, sep, port_text = address.rpartition(":")
    if not sep:
        raise ValueError(f"address {address!r} has no port")
    try:
        port = int(port_text)
    except ValueError:
        raise ValueError(f"address {address!r} has a bad port") from None
    if not 0 <= port <= 65535:
        raise ValueError(f"address {address!r}: port out of range")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host or "0.0.0.0", port


class _Pump:
    """One direction of one connection: read, pass through the chain, write on time."""

    def __init__(
        self,
        conn: _Connection,
        stream: str,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        chain: ToxicChain,
    ) -> None:
        self.conn = conn
        self.stream = stream
        self.reader = reader
        self.writer = writer
        self.chain = chain
        self.queue: collections.deque[Action] = collections.deque()
        self.queued_bytes = 0
        self.finished = False  # the EOF was carried out
        self._changed = asyncio.Event()  # queue grew, or its times moved
        self._space = asyncio.Event()  # queue drained below the limit
        self._space.set()

    def push(self, actions: list[Action]) -> None:
        for action in actions:
            self.queue.append(action)
            if isinstance(action, Emit):
                self.queued_bytes += len(action.data)
        if self.queued_bytes > self.conn.max_buffered_bytes:
            self._space.clear()
        self._changed.set()

    def release(self, now_s: float) -> None:
        """Carry out everything queued as soon as possible (a toxic was removed)."""
        self.queue = collections.deque(_at(action, now_s) for action in self.queue)
        self._changed.set()

    async def read_loop(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await self._space.wait()
            data = await self.reader.read(self.conn.read_chunk_bytes)
            if not data:
                self.push(self.chain.on_eof(loop.time()))
                return
            if not self.queue and self.chain.empty:
                # No toxic and nothing queued: write straight through (FIFO still holds, as
                # the writer hands each action to the transport as soon as it dequeues it).
                self.writer.write(data)
                await self.writer.drain()
                continue
            self.push(self.chain.on_data(data, loop.time()))

    async def write_loop(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            if not self.queue:
                self._changed.clear()
                await self._changed.wait()
                continue
            head = self.queue[0]
            delay_s = head.at_s - loop.time()
            if delay_s > 0:
                # Wake early if release() moved the times forward.
                self._changed.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._changed.wait(), delay_s)
                continue
            self.queue.popleft()
            if isinstance(head, Emit):
                self.queued_bytes -= len(head.data)
                if self.queued_bytes <= self.conn.max_buffered_bytes:
                    self._space.set()
                self.writer.write(head.data)
                await self.writer.drain()
            elif isinstance(head, Eof):
                if self.writer.can_write_eof():
                    self.writer.write_eof()
                self.finished = True
                self.conn.direction_finished()
                return
            else:
                self.conn.close(reset=head.reset)
                return


def _at(action: Action, at_s: float) -> Action:
    if action.at_s <= at_s:
        return action
    if isinstance(action, Emit):
        return Emit(at_s, action.data)
    if isinstance(action, Eof):
        return Eof(at_s)
    return Close(at_s, action.reset)


class _Connection:
    def __init__(
        self,
        proxy: Proxy,
        client: tuple[asyncio.StreamReader, asyncio.StreamWriter],
        upstream: tuple[asyncio.StreamReader, asyncio.StreamWriter],
        rng: random.Random,
    ) -> None:
        self.proxy = proxy
        self.read_chunk_bytes = proxy.read_chunk_bytes
        self.max_buffered_bytes = proxy.max_buffered_bytes
        self._loop = asyncio.get_running_loop()
        self._writers = (client[1], upstream[1])
        now = self._loop.time()
        chains = {UPSTREAM: ToxicChain(rng), DOWNSTREAM: ToxicChain(rng)}
        for spec in proxy.toxics.values():
            chains[spec.stream].add(spec, now)
        self.pumps = {
            UPSTREAM: _Pump(self, UPSTREAM, client[0], upstream[1], chains[UPSTREAM]),
            DOWNSTREAM: _Pump(self, DOWNSTREAM, upstream[0], client[1], chains[DOWNSTREAM]),
        }
        self._tasks: list[asyncio.Task[None]] = []
        self._timer: asyncio.TimerHandle | None = None
        self._closed = asyncio.Event()
        self._arm_timer()

    async def run(self) -> None:
        for pump in self.pumps.values():
            self._tasks.append(asyncio.ensure_future(self._guard(pump.read_loop)))
            self._tasks.append(asyncio.ensure_future(self._guard(pump.write_loop)))
        await self._closed.wait()

    async def _guard(self, loop_fn: Callable[[], Awaitable[None]]) -> None:
        # Takes the coroutine function, not a coroutine: a task cancelled before it starts
        # then leaves no never-awaited coroutine behind.
        try:
            await loop_fn()
        except (ConnectionError, OSError):
            self.close(reset=False)
        except ToxicError as e:
            logger.warning("proxy %s: %s", self.proxy.name, e)
            self.close(reset=False)

    # -- toxic changes ------------------------------------------------------------------

    def add_toxic(self, spec: ToxicSpec) -> None:
        self.pumps[spec.stream].chain.add(spec, self._loop.time())
        self._arm_timer()

    def update_toxic(self, spec: ToxicSpec) -> None:
        self.pumps[spec.stream].chain.update(spec, self._loop.time())
        self._arm_timer()

    def remove_toxic(self, spec: ToxicSpec) -> None:
        now = self._loop.time()
        pump = self.pumps[spec.stream]
        pump.push(pump.chain.remove(spec.name, now))
        pump.release(now)
        self._arm_timer()

    def _arm_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        deadlines = [p.chain.deadline() for p in self.pumps.values()]
        closes = [c for c in deadlines if c is not None]
        if closes:
            first = min(closes, key=lambda c: c.at_s)
            self._timer = self._loop.call_at(first.at_s, self.close, first.reset)

    # -- ending ----------------------------------------------------------------------------

    def direction_finished(self) -> None:
        if all(p.finished for p in self.pumps.values()):
            self.close(reset=False)

    def close(self, reset: bool = False, *, abort: bool = False) -> None:
        """Close both sockets: with RST when ``reset``; at once, dropping what asyncio still
        buffers, when ``abort`` (the proxy is going away); else after flushing."""
        if self._closed.is_set():
            return
        self._closed.set()
        if self._timer is not None:
            self._timer.cancel()
        current = asyncio.current_task()
        for task in self._tasks:
            if task is not current:
                task.cancel()
        for writer in self._writers:
            if reset:
                sock = writer.get_extra_info("socket")
                if sock is not None:
                    with contextlib.suppress(OSError):
                        # SO_LINGER on with 0 s: close() sends RST instead of FIN.
                        sock.setsockopt(
                            socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
                        )
                writer.transport.abort()
            elif abort:
                writer.transport.abort()
            else:
                writer.close()
        self.proxy.forget(self)


class Proxy:
    """A named proxy (Toxiproxy's fields: name, listen, upstream, enabled, toxics)."""

    def __init__(
        self,
        name: str,
        listen: str,
        upstream: str,
        *,
        rng: random.Random,
        read_chunk_bytes: int = READ_CHUNK_BYTES,
        max_buffered_bytes: int = MAX_BUFFERED_BYTES,
        max_connections: int = MAX_CONNECTIONS,
    ) -> None:
        split_address(listen)  # validate early: a ValueError here is the caller's 400
        split_address(upstream)
        self.name = name
        self.listen = listen
        self.upstream = upstream
        self.enabled = False
        self.toxics: dict[str, ToxicSpec] = {}
        self.read_chunk_bytes = read_chunk_bytes
        self.max_buffered_bytes = max_buffered_bytes
        self.max_connections = max_connections
        self._rng = rng
        self._server: asyncio.Server | None = None
        self._connections: set[_Connection] = set()
        # Accept handlers still running, and their upstream connects: stop() ends both, so
        # no handler is left for the loop to cancel (asyncio's stream callback logs that).
        self._handlers: set[asyncio.Task[Any]] = set()
        self._connecting: set[asyncio.Future[Any]] = set()

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "listen": self.listen,
            "upstream": self.upstream,
            "enabled": self.enabled,
            "toxics": [spec.to_json() for spec in self.toxics.values()],
        }

    # -- lifecycle ---------------------------------------------------------------------

    async def start(self) -> None:
        """Listen (``listen`` port 0 picks a port; ``listen`` then holds the real one).
        Raises OSError if the address cannot be bound."""
        if self._server is not None:
            return
        host, port = split_address(self.listen)
        self._server = await asyncio.start_server(self._on_client, host, port, reuse_address=True)
        bound = self._server.sockets[0].getsockname()
        shown_host = f"[{bound[0]}]" if ":" in bound[0] else bound[0]
        self.listen = f"{shown_host}:{bound[1]}"
        self.enabled = True

    async def stop(self) -> None:
        """Stop listening and close every open connection."""
        self.enabled = False
        server, self._server = self._server, None
        if server is not None:
            server.close()
        for pending in list(self._connecting):
            pending.cancel()
        for conn in list(self._connections):
            # A flush could wait forever on a peer that does not read: drop the data.
            conn.close(abort=True)
        handlers = {t for t in self._handlers if t is not asyncio.current_task()}
        if handlers:
            await asyncio.wait(handlers, timeout=STOP_WAIT_S)
        if server is not None:
            await server.wait_closed()

    def forget(self, conn: _Connection) -> None:
        self._connections.discard(conn)

    # -- toxics ------------------------------------------------------------------------

    def add_toxic(self, spec: ToxicSpec) -> None:
        if spec.name in self.toxics:
            raise KeyError(spec.name)
        self.toxics[spec.name] = spec
        for conn in self._connections:
            conn.add_toxic(spec)

    def update_toxic(self, spec: ToxicSpec) -> None:
        self.toxics[spec.name] = spec
        for conn in self._connections:
            conn.update_toxic(spec)

    def remove_toxic(self, name: str) -> None:
        spec = self.toxics.pop(name)
        for conn in list(self._connections):
            conn.remove_toxic(spec)

    def remove_all_toxics(self) -> None:
        for name in list(self.toxics):
            self.remove_toxic(name)

    # -- connections -------------------------------------------------------------------

    async def _on_client(
        self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter
    ) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._handlers.add(task)
        try:
            await self._serve_client(client_reader, client_writer)
        finally:
            self._handlers.discard(task)  # type: ignore[arg-type]

    async def _serve_client(
        self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter
    ) -> None:
        if not self.enabled or len(self._connections) >= self.max_connections:
            client_writer.close()
            return
        host, port = split_address(self.upstream)
        connect = asyncio.ensure_future(
            asyncio.wait_for(asyncio.open_connection(host, port), UPSTREAM_CONNECT_TIMEOUT_S)
        )
        self._connecting.add(connect)
        try:
            await asyncio.wait({connect})
        finally:
            self._connecting.discard(connect)
        if connect.cancelled():  # the proxy stopped meanwhile
            client_writer.close()
            return
        error = connect.exception()
        if error is not None:
            logger.info("proxy %s: upstream %s unreachable: %r", self.name, self.upstream, error)
            client_writer.close()
            return
        upstream = connect.result()
        if not self.enabled:  # disabled while we were connecting
            upstream[1].close()
            client_writer.close()
            return
        rng = random.Random(self._rng.getrandbits(64))
        conn = _Connection(self, (client_reader, client_writer), upstream, rng)
        self._connections.add(conn)
        try:
            await conn.run()
        finally:
            conn.close(reset=False)
