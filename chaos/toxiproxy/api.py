"""Toxiproxy's HTTP API (version 2) over a collection of :class:`Proxy` objects.

Endpoints, bodies and status codes as Toxiproxy's server answers them:

==========================================  =====================================  =========
request                                     body / answer                          status
==========================================  =====================================  =========
GET /version                                {"version": "..."}                     200
POST /reset                                 enable all proxies, remove all toxics  204
GET /proxies                                {name: proxy, ...}                     200
POST /proxies                               {name, upstream, listen?, enabled?}    201
POST /populate                              [proxy, ...] -> {"proxies": [...]}     201
GET /proxies/{proxy}                        proxy with its toxics                  200
POST|PATCH /proxies/{proxy}                 {listen?, upstream?, enabled?}         200
DELETE /proxies/{proxy}                                                            204
GET /proxies/{proxy}/toxics                 [toxic, ...]                           200
POST /proxies/{proxy}/toxics                {name?, type, stream?, toxicity?,      200
                                            attributes?}
GET /proxies/{proxy}/toxics/{toxic}         toxic                                  200
POST|PATCH /proxies/{proxy}/toxics/{toxic}  {toxicity?, attributes?} (merged)      200
DELETE /proxies/{proxy}/toxics/{toxic}                                             204
==========================================  =====================================  =========

A proxy is ``{"name", "listen", "upstream", "enabled", "toxics": [...]}``; a toxic is
``{"name", "type", "stream", "toxicity", "attributes"}``. Errors are ``{"error": message,
"status": code}``: 400 bad body / missing field / invalid toxic, 404 proxy or toxic not found,
409 proxy or toxic already exists, 405 method not allowed, 500 a listen address that cannot be
bound. Like Toxiproxy, requests from browsers (User-Agent ``Mozilla/...``) get 403, so a web
page cannot reconfigure the proxies.

Thread-safety: runs on the server's event loop only.
"""

from __future__ import annotations

import json
import logging
import random
import urllib.parse
from typing import Any

from chaos.toxiproxy.http import Request, Response
from chaos.toxiproxy.proxy import Proxy, split_address
from chaos.toxiproxy.toxics import ToxicError, parse_toxic, update_toxic

logger = logging.getLogger(__name__)

# The Toxiproxy API generation this server speaks (2.x); the suffix names this implementation.
VERSION = "2.0.0-kraftlog"
DEFAULT_LISTEN = "127.0.0.1:0"


class ApiError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def _not_found(kind: str) -> ApiError:
    return ApiError(404, f"{kind} not found")


def _body(request: Request) -> Any:
    try:
        return json.loads(request.body or b"null")
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ApiError(400, f"bad request body: {e}") from None


class ToxiproxyApi:
    """The proxies of one server and the request handler that manages them."""

    def __init__(self, *, rng: random.Random | None = None) -> None:
        self.proxies: dict[str, Proxy] = {}
        self._rng = rng or random.Random()

    async def handle(self, request: Request) -> Response:
        if request.headers.get("user-agent", "").startswith("Mozilla/"):
            return Response(403, {"error": "User agent not allowed", "status": 403})
        try:
            return await self._route(request)
        except ApiError as e:
            return Response(e.status, {"error": str(e), "status": e.status})
        except Exception as e:  # a bug here must not take the API (or the proxies) down
            logger.exception("toxiproxy API: %s %s failed", request.method, request.path)
            return Response(500, {"error": f"internal error: {e!r}", "status": 500})

    async def close(self) -> None:
        """Stop every proxy (the server is shutting down)."""
        for proxy in list(self.proxies.values()):
            await proxy.stop()
        self.proxies.clear()

    # -- routing -----------------------------------------------------------------------

    async def _route(self, request: Request) -> Response:
        parts = [urllib.parse.unquote(p) for p in request.path.strip("/").split("/")]
        method = request.method
        match parts:
            case ["version"]:
                self._allow(method, "GET")
                return Response(200, {"version": VERSION})
            case ["reset"]:
                self._allow(method, "POST")
                return await self._reset()
            case ["populate"]:
                self._allow(method, "POST")
                return await self._populate(_body(request))
            case ["proxies"]:
                if self._allow(method, "GET", "POST") == "GET":
                    return Response(200, {n: p.to_json() for n, p in self.proxies.items()})
                return await self._create_proxy(_body(request))
            case ["proxies", name]:
                verb = self._allow(method, "GET", "POST", "PATCH", "DELETE")
                return await self._one_proxy(verb, name, self._proxy(name), request)
            case ["proxies", name, "toxics"]:
                verb = self._allow(method, "GET", "POST")
                proxy = self._proxy(name)
                if verb == "GET":
                    return Response(200, [t.to_json() for t in proxy.toxics.values()])
                return self._create_toxic(proxy, _body(request))
            case ["proxies", name, "toxics", toxic_name]:
                verb = self._allow(method, "GET", "POST", "PATCH", "DELETE")
                return self._one_toxic(verb, self._proxy(name), toxic_name, request)
        raise ApiError(404, f"no route for {request.path}")

    async def _one_proxy(self, verb: str, name: str, proxy: Proxy, request: Request) -> Response:
        """GET, DELETE, or POST/PATCH (update) of the proxy ``name``."""
        if verb == "GET":
            return Response(200, proxy.to_json())
        if verb == "DELETE":
            await proxy.stop()
            del self.proxies[name]
            return Response(204)
        return await self._update_proxy(proxy, _body(request))

    def _one_toxic(self, verb: str, proxy: Proxy, toxic_name: str, request: Request) -> Response:
        """GET, DELETE, or POST/PATCH (merge into) the toxic ``toxic_name`` of ``proxy``."""
        spec = proxy.toxics.get(toxic_name)
        if spec is None:
            raise _not_found("toxic")
        if verb == "GET":
            return Response(200, spec.to_json())
        if verb == "DELETE":
            proxy.remove_toxic(toxic_name)
            return Response(204)
        try:
            updated = update_toxic(spec, _body(request))
        except ToxicError as e:
            raise ApiError(400, str(e)) from None
        proxy.update_toxic(updated)
        return Response(200, updated.to_json())

    @staticmethod
    def _allow(method: str, *allowed: str) -> str:
        if method not in allowed:
            raise ApiError(405, f"method {method} not allowed; use {', '.join(allowed)}")
        return method

    def _proxy(self, name: str) -> Proxy:
        proxy = self.proxies.get(name)
        if proxy is None:
            raise _not_found("proxy")
        return proxy

    # -- proxies -----------------------------------------------------------------------

    def _proxy_fields(self, body: Any) -> tuple[str, str, str, bool]:
        if not isinstance(body, dict):
            raise ApiError(400, "bad request body: expected a JSON object")
        name, upstream = body.get("name"), body.get("upstream")
        listen = body.get("listen") or DEFAULT_LISTEN
        enabled = body.get("enabled", True)
        for field, value in (("name", name), ("upstream", upstream)):
            if not value:
                raise ApiError(400, f"missing required field: {field}")
            if not isinstance(value, str):
                raise ApiError(400, f"bad request body: {field} must be a string")
        if not isinstance(listen, str):
            raise ApiError(400, "bad request body: listen must be a string")
        if not isinstance(enabled, bool):
            raise ApiError(400, "bad request body: enabled must be true or false")
        for address in (listen, upstream):
            try:
                split_address(address)
            except ValueError as e:
                raise ApiError(400, f"bad request body: {e}") from None
        return name, listen, upstream, enabled

    async def _create_proxy(self, body: Any) -> Response:
        name, listen, upstream, enabled = self._proxy_fields(body)
        if name in self.proxies:
            raise ApiError(409, "proxy already exists")
        proxy = await self._start_new(name, listen, upstream, enabled)
        return Response(201, proxy.to_json())

    async def _start_new(self, name: str, listen: str, upstream: str, enabled: bool) -> Proxy:
        proxy = Proxy(name, listen, upstream, rng=random.Random(self._rng.getrandbits(64)))
        if enabled:
            try:
                await proxy.start()
            except OSError as e:
                raise ApiError(500, f"cannot listen on {listen}: {e}") from None
        self.proxies[name] = proxy
        return proxy

    async def _update_proxy(self, proxy: Proxy, body: Any) -> Response:
        if not isinstance(body, dict):
            raise ApiError(400, "bad request body: expected a JSON object")
        merged = {
            "name": proxy.name,
            "listen": body.get("listen", proxy.listen),
            "upstream": body.get("upstream", proxy.upstream),
            "enabled": body.get("enabled", proxy.enabled),
        }
        _, listen, upstream, enabled = self._proxy_fields(merged)
        if listen != proxy.listen or upstream != proxy.upstream:
            # Toxiproxy restarts a proxy whose addresses change, dropping its connections.
            await proxy.stop()
            proxy.listen, proxy.upstream = listen, upstream
        try:
            if enabled:
                await proxy.start()
            else:
                await proxy.stop()
        except OSError as e:
            raise ApiError(500, f"cannot listen on {proxy.listen}: {e}") from None
        return Response(200, proxy.to_json())

    async def _reset(self) -> Response:
        for proxy in self.proxies.values():
            proxy.remove_all_toxics()
            try:
                await proxy.start()
            except OSError as e:
                raise ApiError(500, f"cannot listen on {proxy.listen}: {e}") from None
        return Response(204)

    async def _populate(self, body: Any) -> Response:
        if not isinstance(body, list):
            raise ApiError(400, "bad request body: expected a JSON array of proxies")
        wanted = [self._proxy_fields(item) for item in body]  # all valid, or nothing changes
        result: list[dict[str, Any]] = []
        for name, listen, upstream, enabled in wanted:
            existing = self.proxies.get(name)
            if existing is not None and (
                existing.upstream != upstream or not _same_listen(existing.listen, listen)
            ):
                await existing.stop()
                del self.proxies[name]
                existing = None
            if existing is None:
                try:
                    existing = await self._start_new(name, listen, upstream, enabled)
                except ApiError as e:
                    return Response(
                        e.status, {"error": str(e), "status": e.status, "proxies": result}
                    )
            result.append(existing.to_json())
        return Response(201, {"proxies": result})

    # -- toxics ------------------------------------------------------------------------

    def _create_toxic(self, proxy: Proxy, body: Any) -> Response:
        try:
            spec = parse_toxic(body)
        except ToxicError as e:
            raise ApiError(400, str(e)) from None
        if spec.name in proxy.toxics:
            raise ApiError(409, "toxic already exists")
        proxy.add_toxic(spec)
        return Response(200, spec.to_json())


def _same_listen(current: str, wanted: str) -> bool:
    """A proxy created with port 0 shows its real port; asking for port 0 again matches it."""
    if current == wanted:
        return True
    current_host, _ = split_address(current)
    wanted_host, wanted_port = split_address(wanted)
    return wanted_port == 0 and current_host == wanted_host
