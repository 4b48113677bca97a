"""Seeded fault schedules: reproducible, mixed, within the time limit, recovery window kept."""

from __future__ import annotations

import itertools

import pytest

from chaos.nemesis import NEMESES, parse_nemeses
from chaos.schedule import ScheduleTimings, plan_schedule

TIMINGS = ScheduleTimings(
    warmup_s=2, hold_min_s=3, hold_max_s=6, gap_min_s=2, gap_max_s=4, recovery_s=10
)


def test_same_seed_same_schedule_other_seed_differs() -> None:
    names = list(NEMESES)
    a = plan_schedule(7, names, 300, TIMINGS)
    assert a == plan_schedule(7, names, 300, TIMINGS)
    assert a != plan_schedule(8, names, 300, TIMINGS)


def test_every_nemesis_before_any_repeats() -> None:
    names = list(NEMESES)
    plan = plan_schedule(3, names, 600, TIMINGS)
    first_round = [f.nemesis for f in plan[: len(names)]]
    assert sorted(first_round) == sorted(names)


def test_faults_are_sequential_and_end_before_the_recovery_window() -> None:
    plan = plan_schedule(11, ["kill", "pause", "partition"], 120, TIMINGS)
    assert plan, "a 120 s run has room for faults"
    assert plan[0].at_s == TIMINGS.warmup_s
    for prev, nxt in itertools.pairwise(plan):
        assert nxt.at_s >= prev.at_s + prev.hold_s + TIMINGS.gap_min_s - 1e-6
    last = plan[-1]
    assert last.at_s + last.hold_s <= 120 - TIMINGS.recovery_s
    assert all(TIMINGS.hold_min_s <= f.hold_s <= TIMINGS.hold_max_s for f in plan)


def test_min_hold_raises_the_hold_of_a_nemesis() -> None:
    plan = plan_schedule(5, ["pause"], 200, TIMINGS, min_hold_s={"pause": 9.5})
    assert plan and all(f.hold_s >= 9.5 for f in plan)


def test_no_nemesis_no_faults_and_bad_timings_rejected() -> None:
    assert plan_schedule(1, [], 100, TIMINGS) == []
    with pytest.raises(ValueError):
        plan_schedule(1, ["kill"], 0, TIMINGS)
    with pytest.raises(ValueError):
        ScheduleTimings(hold_min_s=5, hold_max_s=1)


def test_parse_nemeses() -> None:
    assert parse_nemeses("kill, pause,kill") == ["kill", "pause"]
    assert parse_nemeses("all") == list(NEMESES)
    assert parse_nemeses("none") == []
    with pytest.raises(ValueError, match="unknown nemesis bogus"):
        parse_nemeses("kill,bogus")
