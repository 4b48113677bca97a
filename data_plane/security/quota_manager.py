"""Client quotas as Kafka's ClientQuotaManager: byte-rate limits per user, per client id and
per (user, client id), enforced by throttling.

Quota entities and their precedence: :mod:`common.security.quota`.

Rate. Each entry's bytes are summed in ``quota.window.num`` samples of
``quota.window.size.seconds`` each; rate = sum / window, where window = time since the oldest
live sample began, but at least (samples - 1) full windows (Kafka's Rate.windowSize, so a
quiet client does not get a huge burst measured over a tiny window).

Throttle. When the rate exceeds the quota, throttle_time_ms =
(rate - quota) / quota * window, capped at one sample window (Kafka's
QuotaUtils.boundedThrottleTime with max = quota.window.size.seconds): the time the client must
stay silent for the rate to fall back to the quota. The bytes are recorded whether or not the
request is throttled (Kafka records, then throttles). The broker returns throttle_time_ms in the
response and mutes the connection (reads nothing from it) for that long (KIP-219).

Thread-safety: one lock guards the rate windows; ``record`` may be called from any thread.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from common.security.quota import (
    QuotaEntity,
    QuotaType,
    entity_precedence,
)

# Kafka's defaults (quota.window.num, quota.window.size.seconds).
DEFAULT_QUOTA_WINDOW_NUM = 11
DEFAULT_QUOTA_WINDOW_SIZE_SECONDS = 1
# Bound on tracked (entity, quota type) rate windows; idle ones are dropped first.
MAX_TRACKED_ENTITIES = 100_000


@dataclass(frozen=True, slots=True)
class QuotaDecision:
    """``entity`` whose quota applied (None: unlimited), its ``quota`` (bytes/s) and the rate
    measured after recording, and the throttle time to impose."""

    throttle_time_ms: int
    entity: QuotaEntity | None = None
    quota: float | None = None
    rate: float = 0.0


class _WindowedRate:
    """Kafka's SampledStat + Rate: ``samples`` buckets of ``window_ms`` each."""

    __slots__ = ("_samples", "_starts", "_totals", "last_record_ms", "window_ms")

    def __init__(self, samples: int, window_ms: int, now_ms: int) -> None:
        self._samples = samples
        self.window_ms = window_ms
        self._starts: list[int] = [now_ms]
        self._totals: list[float] = [0.0]
        self.last_record_ms = now_ms

    def _purge(self, now_ms: int) -> None:
        horizon = self._samples * self.window_ms
        while len(self._starts) > 1 and now_ms - self._starts[0] >= horizon:
            self._starts.pop(0)
            self._totals.pop(0)
        if now_ms - self._starts[0] >= horizon:  # the only sample is obsolete too
            self._starts[0] = now_ms
            self._totals[0] = 0.0

    def record(self, value: float, now_ms: int) -> None:
        self._purge(now_ms)
        if now_ms - self._starts[-1] >= self.window_ms:
            self._starts.append(now_ms)
            self._totals.append(0.0)
            if len(self._starts) > self._samples:
                self._starts.pop(0)
                self._totals.pop(0)
        self._totals[-1] += value
        self.last_record_ms = now_ms

    def window_size_ms(self, now_ms: int) -> int:
        self._purge(now_ms)
        elapsed = now_ms - self._starts[0]
        full = elapsed // self.window_ms
        minimum = self._samples - 1
        if full < minimum:
            elapsed += (minimum - full) * self.window_ms
        return max(elapsed, 1)

    def rate_per_s(self, now_ms: int) -> float:
        window = self.window_size_ms(now_ms)
        return sum(self._totals) / (window / 1000.0)


class ClientQuotaManager:
    """Byte-rate quotas of one type (produce or fetch) on one broker."""

    def __init__(
        self,
        quota_type: QuotaType,
        *,
        window_num: int = DEFAULT_QUOTA_WINDOW_NUM,
        window_size_seconds: int = DEFAULT_QUOTA_WINDOW_SIZE_SECONDS,
        clock_ms: Callable[[], int],
    ) -> None:
        if window_num < 2:
            raise ValueError("quota.window.num must be at least 2")
        if window_size_seconds < 1:
            raise ValueError("quota.window.size.seconds must be at least 1")
        self.quota_type = quota_type
        self.window_num = window_num
        self.window_ms = window_size_seconds * 1000
        self.max_throttle_time_ms = self.window_ms
        self._clock_ms = clock_ms
        self._lock = threading.Lock()
        self._quotas: dict[QuotaEntity, float] = {}
        self._rates: dict[QuotaEntity, _WindowedRate] = {}
        # Total throttle time handed out (ms): a metric.
        self.throttle_time_ms_total = 0

    def update_quotas(self, configs: Mapping[QuotaEntity, Mapping[str, float]]) -> None:
        """Replace every quota of this type from ``entity -> {quota key: value}``."""
        key = self.quota_type.value
        quotas = {e: float(v[key]) for e, v in configs.items() if key in v and v[key] > 0}
        with self._lock:
            self._quotas = quotas
            for entity in list(self._rates):
                if entity not in quotas:
                    del self._rates[entity]

    @property
    def enabled(self) -> bool:
        return bool(self._quotas)

    def quota_for(self, user: str, client_id: str) -> tuple[QuotaEntity, float] | None:
        quotas = self._quotas
        if not quotas:
            return None
        for entity in entity_precedence(user, client_id):
            quota = quotas.get(entity)
            if quota is not None:
                return entity, quota
        return None

    def record(self, user: str, client_id: str, value_bytes: int) -> QuotaDecision:
        """Record ``value_bytes`` for (user, client_id) and return the throttle to impose."""
        found = self.quota_for(user, client_id)
        if found is None:
            return QuotaDecision(0)
        entity, quota = found
        now = self._clock_ms()
        with self._lock:
            rate = self._rates.get(entity)
            if rate is None:
                if len(self._rates) >= MAX_TRACKED_ENTITIES:
                    self._evict_idle()
                rate = _WindowedRate(self.window_num, self.window_ms, now)
                self._rates[entity] = rate
            rate.record(float(value_bytes), now)
            observed = rate.rate_per_s(now)
            throttle = 0
            if observed > quota:
                window = rate.window_size_ms(now)
                throttle = min(
                    math.ceil((observed - quota) / quota * window), self.max_throttle_time_ms
                )
                self.throttle_time_ms_total += throttle
        return QuotaDecision(throttle, entity, quota, observed)

    def _evict_idle(self) -> None:
        oldest = sorted(self._rates.items(), key=lambda kv: kv[1].last_record_ms)
        for entity, _ in oldest[: max(1, len(oldest) // 10)]:
            del self._rates[entity]
