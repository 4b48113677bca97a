"""Seeded fault schedules: which nemesis starts when and how long it holds.

A schedule is a pure function of (seed, nemesis names, time limit, timings), so a run can be
repeated: ``plan_schedule(seed=7, ...)`` always gives the same list. (Targets are chosen when
a fault starts, from the live cluster, with a generator seeded from the same seed.)

Layout of a run of ``time_limit_s`` seconds::

    | warm-up | fault 1 hold | gap | fault 2 hold | gap | ... | heal-all | recovery window |
                                                     last fault ends before time_limit_s
                                                     - recovery_s

Faults run one at a time: each starts, holds, heals, and the cluster gets a gap to recover
before the next one. Instantaneous faults (rolling restart, leadership move) have no hold.
The runner always ends with heal-all and a recovery window in which only the workload runs.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

# Timings of a default schedule, in seconds.
DEFAULT_WARMUP_S = 3.0
DEFAULT_HOLD_MIN_S = 3.0
DEFAULT_HOLD_MAX_S = 10.0
DEFAULT_GAP_MIN_S = 3.0
DEFAULT_GAP_MAX_S = 8.0
DEFAULT_RECOVERY_S = 15.0


@dataclass(frozen=True, slots=True)
class ScheduledFault:
    at_s: float  # seconds after the workload started
    nemesis: str
    hold_s: float


@dataclass(frozen=True, slots=True)
class ScheduleTimings:
    warmup_s: float = DEFAULT_WARMUP_S
    hold_min_s: float = DEFAULT_HOLD_MIN_S
    hold_max_s: float = DEFAULT_HOLD_MAX_S
    gap_min_s: float = DEFAULT_GAP_MIN_S
    gap_max_s: float = DEFAULT_GAP_MAX_S
    recovery_s: float = DEFAULT_RECOVERY_S

    def __post_init__(self) -> None:
        if not 0 <= self.hold_min_s <= self.hold_max_s:
            raise ValueError("need 0 <= hold_min_s <= hold_max_s")
        if not 0 <= self.gap_min_s <= self.gap_max_s:
            raise ValueError("need 0 <= gap_min_s <= gap_max_s")
        if self.warmup_s < 0 or self.recovery_s < 0:
            raise ValueError("warmup_s and recovery_s must be >= 0")


def plan_schedule(
    seed: int,
    nemeses: list[str],
    time_limit_s: float,
    timings: ScheduleTimings | None = None,
    min_hold_s: dict[str, float] | None = None,
) -> list[ScheduledFault]:
    """The faults of one run. Every nemesis appears before any repeats (a shuffled round,
    then another), so short runs still mix them. ``min_hold_s`` raises the hold of some
    nemeses (a pause must outlast the session timeout). Faults fit before
    ``time_limit_s - recovery_s``; nothing is scheduled when no nemesis is given."""
    if time_limit_s <= 0:
        raise ValueError(f"time limit must be > 0, got {time_limit_s}")
    timings = timings or ScheduleTimings()
    rng = random.Random(seed)
    floor = min_hold_s or {}
    end_s = time_limit_s - timings.recovery_s
    out: list[ScheduledFault] = []
    t = timings.warmup_s
    pool: list[str] = []
    while nemeses:
        if not pool:
            pool = list(nemeses)
            rng.shuffle(pool)
        name = pool.pop()
        hold = rng.uniform(timings.hold_min_s, timings.hold_max_s)
        hold = max(hold, floor.get(name, 0.0))
        if t + hold > end_s:
            break
        out.append(ScheduledFault(round(t, 3), name, round(hold, 3)))
        t += hold + rng.uniform(timings.gap_min_s, timings.gap_max_s)
    return out
