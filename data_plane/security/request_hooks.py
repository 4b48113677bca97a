"""What the broker's connection layer does around each request for security and metrics,
kept out of the connection's I/O code (sans-IO; the connection calls it).

Per request, in order:

1. :meth:`RequestHooks.raw_token` — after SaslHandshake v0 the next frame is a bare SASL
   token; its reply is a bare length-prefixed token (:func:`raw_frame`), a failure closes.
2. :meth:`RequestHooks.before` — SASL gating (SaslHandshake / SaslAuthenticate answered here,
   anything else before authentication closes), ACLs (a filtered request, a complete answer, or
   a function to merge refusals into the handler's answer), the Produce quota (request bytes),
   and the request metrics. Returns a :class:`Plan`.
3. :meth:`Plan.after` — applied to the handler's answer: ACL merge, the Fetch quota (response
   bytes), ``throttle_time_ms``, bytes out, latency. When a quota was exceeded, ``mute(ms)``
   tells the connection to stop reading from the client for that long (KIP-219).

Thread-safety: one instance per connection, on the event loop thread.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from common.error_codes import ErrorCode
from common.protocol.api_keys import ApiKey
from common.protocol.codec import Body, RequestHeader, encode_response
from common.protocol.fetch_replica import fetch_replica_id
from common.protocol.message_base import Message
from data_plane.metrics.names import NodeMetrics
from data_plane.security.broker_security import ConnectionSecurity

_API_NAMES: dict[int, str] = {
    int(k): "".join(part.capitalize() for part in k.name.split("_")) for k in ApiKey
}


def api_name(api_key: int) -> str:
    """Kafka's name of an API (``Produce``, ``SaslAuthenticate``) for metric labels."""
    return _API_NAMES.get(api_key, f"Unknown{api_key}")


def raw_frame(token: bytes) -> bytes:
    """A bare SASL token on the wire (handshake v0): int32 length + bytes."""
    return struct.pack(">i", len(token)) + token


@dataclass(slots=True)
class Plan:
    """What to do with one request. ``reply``: answer with this body without calling the
    handler; ``close_after``: close once the answer is sent; ``close_now``: close without an
    answer; otherwise call the handler with ``body`` and pass its answer through ``after``."""

    body: Body
    reply: Body | None = None
    close_after: bool = False
    close_now: bool = False
    _after: list[Callable[[Body], Body]] = field(default_factory=list)
    _done: Callable[[], None] | None = None

    def after(self, result: Any) -> Any:
        """The handler's answer (a body or a sentinel such as NO_RESPONSE) -> what to send."""
        # Sentinels (NO_RESPONSE) pass untouched; a dict or a typed message goes through the
        # finishing steps (authorization's merged refusals, quotas, metrics).
        if isinstance(result, dict | Message):
            for fn in self._after:
                result = fn(result)
        if self._done is not None:
            self._done()
        return result


class RequestHooks:
    def __init__(
        self,
        security: ConnectionSecurity | None,
        metrics: NodeMetrics | None,
        listener_name: str,
        mute: Callable[[int], None] | None = None,
    ) -> None:
        self.security = security
        self.metrics = metrics
        self.listener_name = listener_name
        self._mute_fn = mute

    def bind_mute(self, mute: Callable[[int], None]) -> None:
        """Set the connection's mute function (the connection exists after its hooks)."""
        self._mute_fn = mute

    def _mute(self, throttle_ms: int) -> None:
        if self._mute_fn is not None:
            self._mute_fn(throttle_ms)

    @property
    def expects_raw_token(self) -> bool:
        return self.security is not None and self.security.expects_raw_token

    def raw_token(self, frame: bytes | memoryview) -> bytes | None:
        """The bare reply frame to a v0 SASL token, or None: close the connection."""
        security = self.security
        reply = security.raw_token(bytes(frame)) if security is not None else None
        if reply is None:
            self._auth_failed()
            return None
        return raw_frame(reply)

    def _auth_failed(self) -> None:
        if self.metrics is not None:
            self.metrics.authentication_failures.inc(1, self.listener_name)

    def before(self, header: RequestHeader, body: Body, frame_bytes: int) -> Plan:
        api_key = header.api_key
        plan = Plan(body)
        metrics = self.metrics
        if metrics is not None:
            name = api_name(api_key)
            metrics.requests.inc(1, name)
            started = time.monotonic()
            plan._done = lambda: metrics.request_latency.observe(time.monotonic() - started, name)
        security = self.security
        if security is None:
            return plan
        reply = security.intercept(api_key, header.api_version, body)
        if reply is not None:
            if reply.close and (
                reply.body is None
                or reply.body.get("error_code") == ErrorCode.SASL_AUTHENTICATION_FAILED
            ):
                self._auth_failed()
            if reply.body is None:
                plan.close_now = True
            else:
                plan.reply = reply.body
                plan.close_after = reply.close
            return plan
        verdict = security.authorize(api_key, header.api_version, body)
        if verdict is not None:
            if verdict.denied and metrics is not None:
                for rtype, count in verdict.denied.items():
                    metrics.authorization_denials.inc(count, rtype.name.title())
            if verdict.respond_now is not None:
                plan.reply = verdict.respond_now
                return plan
            plan.body = verdict.body
            if verdict.finish is not None:
                plan._after.append(verdict.finish)
        if api_key == ApiKey.PRODUCE:
            self._produce(plan, header, frame_bytes)
        elif api_key == ApiKey.FETCH and fetch_replica_id(header.api_version, plan.body) < 0:
            plan._after.append(lambda r: self._fetch_quota(header, r))
        if metrics is not None and api_key == ApiKey.FETCH:
            plan._after.append(self._bytes_out)
        return plan

    def _produce(self, plan: Plan, header: RequestHeader, frame_bytes: int) -> None:
        metrics = self.metrics
        if metrics is not None:
            for topic in plan.body.get("topic_data") or []:
                size = sum(_size(p.get("records")) for p in topic.get("partition_data") or [])
                if size:
                    metrics.bytes_in.inc(size, topic.get("name", ""))
        security = self.security
        if security is None:
            return
        throttle = security.throttle_ms(ApiKey.PRODUCE, header.client_id, frame_bytes)
        if throttle > 0:
            self._throttled("produce", throttle)
            plan._after.append(lambda r: _with_throttle(r, throttle))

    def _fetch_quota(self, header: RequestHeader, response: Body) -> Body:
        security = self.security
        if security is None or not security.fetch_quota_enabled:
            return response
        size = encode_response(header, response).total_length
        throttle = security.throttle_ms(ApiKey.FETCH, header.client_id, size)
        if throttle > 0:
            self._throttled("fetch", throttle)
            response = _with_throttle(response, throttle)
        return response

    def _throttled(self, quota_type: str, throttle_ms: int) -> None:
        if self.metrics is not None:
            self.metrics.throttle_time.inc(throttle_ms / 1000, quota_type)
        self._mute(throttle_ms)

    def _bytes_out(self, response: Body) -> Body:
        metrics = self.metrics
        if metrics is not None:
            for topic in response.get("responses") or []:
                size = sum(_size(p.get("records")) for p in topic.get("partitions") or [])
                if size:
                    metrics.bytes_out.inc(size, topic.get("topic", ""))
        return response


def _size(records: Any) -> int:
    if records is None:
        return 0
    length = getattr(records, "length", None)
    if isinstance(length, int):
        return length
    try:
        return len(records)
    except TypeError:
        return 0


def _with_throttle(response: Body, throttle_ms: int) -> Body:
    response["throttle_time_ms"] = max(int(response.get("throttle_time_ms") or 0), throttle_ms)
    return response
