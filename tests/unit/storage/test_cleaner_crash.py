"""A process killed at every step of the cleaner's swap (.cleaned written, each rename of
.cleaned -> .swap, of the sources to .deleted, of .swap -> final name) recovers on the next
open to either the log before the cleaning or the cleaned log, never a mix, with no
.cleaned/.swap file left."""

from __future__ import annotations

import os
import shutil
import signal
import time

import pytest

from data_plane.storage import segment as segment_module
from data_plane.storage.log import Log

from .cleaner_helpers import COMPACT, append_keyed, clean, read_all
from .conftest import ManualClock

# Exit status of a child that "crashed" where it was told to.
CRASH_STATUS = 17
CHILD_TIMEOUT_S = 120.0


def _clean_in_child(path: str, crash_at: int, hw: int, checkpoint: int) -> tuple[int, int]:
    """Fork a child that opens the log in ``path``, runs one cleaning and dies (``os._exit``:
    no cleanup, no close) at its ``crash_at``-th ``os.replace`` (0: while the ``.cleaned``
    files are written, before any rename; -1: never). Returns (exit status, renames done)."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        status = 1
        try:
            os.close(read_fd)
            status = _child(path, crash_at, hw, checkpoint, write_fd)
        finally:
            os._exit(status)
    os.close(write_fd)
    try:
        deadline = time.monotonic() + CHILD_TIMEOUT_S
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                raise AssertionError(f"cleaning child for step {crash_at} hung")
            time.sleep(0.01)
        out = os.read(read_fd, 64)
    finally:
        os.close(read_fd)
    return os.waitstatus_to_exitcode(status), int(out or b"0")


def _child(path: str, crash_at: int, hw: int, checkpoint: int, out_fd: int) -> int:
    clock = ManualClock()
    log = Log(
        path,
        COMPACT,
        topic="t",
        partition=0,
        clock_ms=clock,
        high_watermark=hw,
        clean_shutdown=True,
        recovery_point=hw,
    )
    calls = [0]
    real_replace = os.replace

    def replace(src: str, dst: str) -> None:
        calls[0] += 1
        if calls[0] == crash_at:
            os._exit(CRASH_STATUS)
        real_replace(src, dst)

    os.replace = replace  # type: ignore[assignment]  # the child only
    if crash_at == 0:
        real_inactive = segment_module.LogSegment.on_become_inactive

        def die(self: segment_module.LogSegment) -> None:
            if self.log.path.endswith(".cleaned"):
                os._exit(CRASH_STATUS)
            real_inactive(self)

        segment_module.LogSegment.on_become_inactive = die  # type: ignore[method-assign]
    clean(log, clock, checkpoint)
    os.write(out_fd, str(calls[0]).encode())
    return 0


def _records(log: Log) -> list[tuple[int, bytes | None, bytes | None]]:
    return [(r.offset, r.key, r.value) for r in read_all(log)[1]]


@pytest.fixture
def template(tmp_path, clock):
    """A log cleaned once, then written to again, closed cleanly: the next cleaning merges
    the shrunk segments of the first one (a group of several sources) and cleans the new."""
    path = str(tmp_path / "template" / "t-0")
    log = Log(path, COMPACT, topic="t", partition=0, clock_ms=clock)
    for r in range(4):
        for k in range(8):
            append_keyed(log, [(b"k%d" % k, (b"a%d-" % r).ljust(40, b"v"))])
    log.roll()
    first = clean(log, clock)
    assert first.completed
    for r in range(3):
        for k in range(4):
            append_keyed(log, [(b"k%d" % k, (b"b%d-" % r).ljust(40, b"v"))])
    append_keyed(log, [(b"k7", None)])
    log.roll()
    before = _records(log)
    hw = log.high_watermark
    end = log.log_end_offset
    log.close()
    return path, hw, end, first.end_offset, before


def test_a_crash_at_every_step_of_the_swap_recovers(tmp_path, clock, template) -> None:
    path, hw, end, checkpoint, before = template
    # A full run: how many renames, and the cleaned result.
    full = str(tmp_path / "full" / "t-0")
    shutil.copytree(path, full)
    status, renames = _clean_in_child(full, -1, hw, checkpoint)
    assert status == 0
    assert renames >= 9  # at least one group: 3 + 3 per source + 3
    cleaned_log = Log(full, COMPACT, topic="t", partition=0, clock_ms=clock, high_watermark=hw)
    after = _records(cleaned_log)
    cleaned_log.close()
    assert after != before and len(after) < len(before)
    outcomes = set()
    for crash_at in range(renames + 1):
        work = str(tmp_path / f"crash-{crash_at}" / "t-0")
        shutil.copytree(path, work)
        status, _ = _clean_in_child(work, crash_at, hw, checkpoint)
        assert status == CRASH_STATUS, crash_at
        log = Log(work, COMPACT, topic="t", partition=0, clock_ms=clock, high_watermark=hw)
        try:
            names = os.listdir(work)
            assert not [n for n in names if n.endswith((".cleaned", ".swap"))], names
            assert log.log_end_offset == end
            got = _records(log)
            # Several groups swap one after another: every record is either the original's
            # or the cleaned log's, the latest value of each key is the same, and offsets
            # never go backwards.
            assert set(after) <= set(got) <= set(before), crash_at
            assert [o for o, _k, _v in got] == sorted(o for o, _k, _v in got)
            latest = {k: v for _o, k, v in got}
            assert latest == {k: v for _o, k, v in before}
            outcomes.add(len(got))
            # And it cleans on from there.
            assert clean(log, clock, checkpoint).completed
            assert _records(log) == after
        finally:
            log.close()
    assert max(outcomes) == len(before) and min(outcomes) < len(before)
