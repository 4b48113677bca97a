"""The Toxiproxy-compatible server: the HTTP API plus its proxies on one asyncio loop.

Two ways to run it:

- in-process: ``handle = serve("127.0.0.1", 8474)`` starts the loop in a daemon thread and
  returns once the API listens; ``handle.stop()`` closes the API, every proxy and every
  proxied connection, and joins the thread (also as a context manager);
- as a process: ``python -m chaos.toxiproxy --host 127.0.0.1 --port 8474`` (SIGINT/SIGTERM
  stop it cleanly).

Clients (toxiproxy-python, toxiproxy-cli, the Go/Ruby clients) talk to it exactly as to
Shopify's toxiproxy-server; see chaos/toxiproxy/api.py for the endpoints and toxics.py for the
toxics' semantics.

Thread-safety: :meth:`ToxiproxyServer.stop` may be called from any thread; all proxy state is
touched only by the server's loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import threading
from typing import Any

from chaos.toxiproxy.api import ToxiproxyApi
from chaos.toxiproxy.http import MAX_HEADER_BYTES, serve_connection

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8474
START_TIMEOUT_S = 10.0
STOP_TIMEOUT_S = 10.0


class ToxiproxyServer:
    """A running server (from :func:`serve`). ``host``/``port`` are where the API listens."""

    def __init__(self, host: str, port: int, *, seed: int | None = None) -> None:
        self.host = host
        self.port = port
        self.api = ToxiproxyApi(rng=random.Random(seed))
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.Server | None = None
        self._stopped: asyncio.Event | None = None
        self._thread: threading.Thread | None = None
        self._started = threading.Event()
        self._api_connections: dict[asyncio.StreamWriter, asyncio.Task[Any] | None] = {}
        self._error: BaseException | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    async def start_async(self) -> None:
        """Listen on the current loop (port 0 = any free port; ``port`` then holds it)."""
        self._loop = asyncio.get_running_loop()
        self._stopped = asyncio.Event()
        self._server = await asyncio.start_server(
            self._serve_api_connection,
            self.host,
            self.port,
            reuse_address=True,
            limit=MAX_HEADER_BYTES,
        )
        self.port = self._server.sockets[0].getsockname()[1]

    async def _serve_api_connection(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        task = asyncio.current_task()
        self._api_connections[writer] = task
        try:
            await serve_connection(reader, writer, self.api.handle)
        finally:
            self._api_connections.pop(writer, None)

    async def run_until_stopped(self) -> None:
        if self._stopped is None:
            raise RuntimeError("start_async() first")
        await self._stopped.wait()
        await self.close_async()

    async def close_async(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.close()
        # Close idle keep-alive API connections so their handlers end by themselves rather
        # than being cancelled by the loop's shutdown.
        for writer in list(self._api_connections):
            writer.close()
        handlers = [t for t in self._api_connections.values() if t is not None]
        if handlers:
            await asyncio.wait(handlers, timeout=STOP_TIMEOUT_S / 2)
        await self.api.close()
        if server is not None:
            await server.wait_closed()

    def request_stop(self) -> None:
        """Ask a running server to stop (from any thread)."""
        if self._loop is not None and self._stopped is not None and not self._loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                self._loop.call_soon_threadsafe(self._stopped.set)

    # -- in a thread -------------------------------------------------------------------

    def start_in_thread(self) -> None:
        self._thread = threading.Thread(
            target=self._thread_main, name=f"toxiproxy-{self.port}", daemon=True
        )
        self._thread.start()
        if not self._started.wait(START_TIMEOUT_S):
            raise TimeoutError(f"toxiproxy server did not start within {START_TIMEOUT_S} s")
        if self._error is not None:
            raise self._error

    def _thread_main(self) -> None:
        async def main() -> None:
            try:
                await self.start_async()
            except BaseException as e:
                self._error = e
                raise
            finally:
                self._started.set()
            await self.run_until_stopped()

        with contextlib.suppress(OSError):
            asyncio.run(main())

    def stop(self) -> None:
        """Close the API, all proxies and connections; wait for the thread to end."""
        self.request_stop()
        if self._thread is not None:
            self._thread.join(STOP_TIMEOUT_S)
            if self._thread.is_alive():
                raise TimeoutError(f"toxiproxy server did not stop within {STOP_TIMEOUT_S} s")
            self._thread = None

    def __enter__(self) -> ToxiproxyServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def serve(
    host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, *, seed: int | None = None
) -> ToxiproxyServer:
    """Start a server in a background thread; returns once the API listens. ``seed`` makes
    toxicity draws and jitter reproducible."""
    server = ToxiproxyServer(host, port, seed=seed)
    server.start_in_thread()
    return server
