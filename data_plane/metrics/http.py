"""The Prometheus scrape endpoint: ``GET /metrics`` on a daemon thread (http.server).

Only GET /metrics (and / as an index) are served; anything else is 404. Each scrape renders
the registry at that moment. The server binds when constructed (``port`` 0 is allowed only in
tests; nodes take ``metrics.port`` from their config) and ``close()`` stops it and joins the
thread.

Thread-safety: start/close from one thread; requests are served on the server thread(s).
"""

from __future__ import annotations

import http.server
import logging
import threading

from data_plane.metrics.registry import CONTENT_TYPE, Registry

logger = logging.getLogger(__name__)
# Bound on shutdown waits.
CLOSE_TIMEOUT_S = 5.0


class _Handler(http.server.BaseHTTPRequestHandler):
    registry: Registry  # set on the subclass made per server

    def do_GET(self) -> None:
        if self.path.split("?", 1)[0] not in ("/metrics", "/"):
            self.send_error(404, "only /metrics is served")
            return
        if self.path == "/":
            body = b'<a href="/metrics">metrics</a>\n'
            content_type = "text/html"
        else:
            body = self.registry.expose().encode("utf-8")
            content_type = CONTENT_TYPE
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        logger.debug("metrics %s: " + format, self.address_string(), *args)


class MetricsHttpServer:
    def __init__(self, registry: Registry, host: str, port: int) -> None:
        handler = type("MetricsHandler", (_Handler,), {"registry": registry})
        self._server = http.server.ThreadingHTTPServer((host, port), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.2},
            name="metrics-http",
            daemon=True,
        )

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        if self._thread.is_alive():
            self._server.shutdown()
            self._thread.join(CLOSE_TIMEOUT_S)
        self._server.server_close()
