"""The transactional properties on handcrafted histories: a clean history passes, and each
anomaly the checker must find in transactions (aborted and intermediate reads, lost
committed writes, partial transactions, duplicates, exactly-once transform, offsets moving
back, hanging transactions, skips) is flagged in a history made to contain just it.

The base history: producer transactions A (commit: in/0, in/1), B (meant to abort: in/0,
in/1) and C (commit: in/0); a transform group ``g`` whose transactions T1 and T2 turn A's
and C's records into outputs; a read_committed and a read_uncommitted observer; both final
reads of both topics; the group's final offsets. Offsets leave room for the markers::

    in/0   0 A-0   1 marker   2 B-0   3 marker(abort)   4 C-0   5 marker    HW 6
    in/1   0 A-1   1 marker   2 B-1   3 marker(abort)                       HW 4
    out/0  0 A-0|T1   1 marker   2 C-0|T2   3 marker                        HW 4
    out/1  0 A-1|T1   1 marker                                              HW 2
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from xml.etree import ElementTree

import pytest

from chaos.checker import CheckResult, write_report
from chaos.checker import model as k
from tests.unit.chaos.history_builder import HistoryBuilder

IN, OUT, GROUP = "in", "out", "g"


@dataclass
class Base:
    """What a test may change before the base history is written."""

    observer_committed: list[tuple[float, list[tuple[int, int, str]]]] = field(
        default_factory=lambda: [(2.0, [(0, 0, "A-0"), (1, 0, "A-1")]), (4.0, [(0, 4, "C-0")])]
    )
    finals: dict[tuple[str, int, bool], list[tuple[int, str]]] = field(
        default_factory=lambda: {
            (IN, 0, False): [(0, "A-0"), (2, "B-0"), (4, "C-0")],
            (IN, 0, True): [(0, "A-0"), (4, "C-0")],
            (IN, 1, False): [(0, "A-1"), (2, "B-1")],
            (IN, 1, True): [(0, "A-1")],
            (OUT, 0, False): [(0, "A-0|T1"), (2, "C-0|T2")],
            (OUT, 0, True): [(0, "A-0|T1"), (2, "C-0|T2")],
            (OUT, 1, False): [(0, "A-1|T1")],
            (OUT, 1, True): [(0, "A-1|T1")],
        }
    )
    hws: dict[tuple[str, int], int] = field(
        default_factory=lambda: {(IN, 0): 6, (IN, 1): 4, (OUT, 0): 4, (OUT, 1): 2}
    )
    lso: dict[tuple[str, int], int] = field(default_factory=dict)
    group_offsets: list[tuple[str, int, int]] = field(
        default_factory=lambda: [(IN, 0, 5), (IN, 1, 1)]
    )
    t2_offsets: list[tuple[str, int, int]] = field(default_factory=lambda: [(IN, 0, 5)])
    extra: list = field(default_factory=list)  # callables (builder) -> None, run at t=5.x


def run(tmp_path: Path, base: Base) -> CheckResult:
    b = HistoryBuilder(tmp_path)
    b.assign("observer-c", {0: 0, 1: 0}, 0.0, topic=IN)
    b.assign("observer-u", {0: 0, 1: 0}, 0.0, topic=IN)
    b.txn("A", [(IN, 0, "A-0"), (IN, 1, "A-1")], 1.0, 1.1)
    b.txn("B", [(IN, 0, "B-0"), (IN, 1, "B-1")], 1.2, 1.3, intent="abort")
    b.poll(
        "observer-u", [(0, 0, "A-0"), (0, 2, "B-0"), (1, 0, "A-1"), (1, 2, "B-1")], 1.4, topic=IN
    )
    b.txn("C", [(IN, 0, "C-0")], 1.5, 1.6)
    b.assign("transform-0", {0: None, 1: None}, 1.7, group=GROUP, topic=IN)
    b.poll("transform-0", [(0, 0, "A-0"), (1, 0, "A-1")], 1.8, topic=IN, committed=True)
    b.txn(
        "T1",
        [(OUT, 0, "A-0|T1"), (OUT, 1, "A-1|T1")],
        1.9,
        1.95,
        process="transform-0",
        group=GROUP,
        offsets=[(IN, 0, 1), (IN, 1, 1)],
        reads=[(IN, 0, 0, "A-0"), (IN, 1, 0, "A-1")],
    )
    for t, records in base.observer_committed:
        b.poll("observer-c", records, t, topic=IN, committed=True)
    b.poll("transform-0", [(0, 4, "C-0")], 4.1, topic=IN, committed=True)
    b.txn(
        "T2",
        [(OUT, 0, "C-0|T2")],
        4.2,
        4.4,
        process="transform-0",
        group=GROUP,
        offsets=base.t2_offsets,
        reads=[(IN, 0, 4, "C-0")],
    )
    for step in base.extra:
        step(b)
    t = 6.0
    for (topic, partition, committed), records in base.finals.items():
        b.final(
            partition,
            base.hws[(topic, partition)],
            records=records,
            t=t,
            topic=topic,
            committed=committed,
            last_stable_offset=base.lso.get((topic, partition)),
        )
        t += 0.1
    b.group_offsets(GROUP, base.group_offsets, t)
    return b.check()


def kinds(result: CheckResult) -> set[str]:
    return set(result.anomaly_counts)


def test_clean_transactional_history_is_valid(tmp_path: Path) -> None:
    result = run(tmp_path, Base())
    assert result.valid, result.anomalies
    assert result.anomaly_counts == {}
    assert sorted(result.checked_partitions) == [(IN, 0), (IN, 1), (OUT, 0), (OUT, 1)]


def test_read_committed_record_of_an_intended_abort_is_an_aborted_read(tmp_path: Path) -> None:
    base = Base()
    base.observer_committed = [
        (2.0, [(0, 0, "A-0"), (0, 2, "B-0"), (1, 0, "A-1")]),
        (4.0, [(0, 4, "C-0")]),
    ]
    result = run(tmp_path, base)
    assert kinds(result) == {k.ABORTED_READ}
    assert result.anomalies[0].details["transaction"] == "B"


def test_read_of_a_transaction_the_logs_show_aborted_is_an_aborted_read(tmp_path: Path) -> None:
    """The producer never learnt the outcome (info); the final reads show it aborted."""
    base = Base()

    def unknown_txn(b: HistoryBuilder) -> None:
        b.txn("D", [(IN, 1, "D-1")], 5.0, 5.1, outcome="info")
        b.poll("observer-c", [(1, 4, "D-1")], 5.2, topic=IN, committed=True)

    base.extra = [unknown_txn]
    base.finals[(IN, 1, False)] = [(0, "A-1"), (2, "B-1"), (4, "D-1")]
    base.hws[(IN, 1)] = 6
    result = run(tmp_path, base)
    assert kinds(result) == {k.ABORTED_READ}


def test_read_before_the_commit_began_is_an_intermediate_read(tmp_path: Path) -> None:
    base = Base()

    def open_txn_read(b: HistoryBuilder) -> None:
        index = b.at(5.0).invoke(
            "txn-producer-1", "txn", {"id": "E", "intent": "commit", "writes": [[IN, 1, "E-1"]]}
        )
        b.poll("observer-c", [(1, 4, "E-1")], 5.1, topic=IN, committed=True)
        b.txn_ok(index, "commit", 5.5, commit_at=5.3)

    base.extra = [open_txn_read]
    base.finals[(IN, 1, False)] = [(0, "A-1"), (2, "B-1"), (4, "E-1")]
    base.finals[(IN, 1, True)] = [(0, "A-1"), (4, "E-1")]
    base.hws[(IN, 1)] = 6
    result = run(tmp_path, base)
    assert kinds(result) == {k.INTERMEDIATE_READ}


def test_committed_write_missing_from_the_committed_log_is_lost(tmp_path: Path) -> None:
    base = Base()
    base.observer_committed = [(2.0, [(0, 0, "A-0"), (1, 0, "A-1")])]
    base.finals[(IN, 1, True)] = []
    base.finals[(OUT, 1, True)] = []
    base.group_offsets = [(IN, 0, 5)]
    result = run(tmp_path, base)
    assert k.LOST_COMMITTED_WRITE in kinds(result)
    lost = [a for a in result.anomalies if a.kind == k.LOST_COMMITTED_WRITE]
    assert {a.details["transaction"] for a in lost} == {"A", "T1"}


def test_partly_visible_transaction_is_not_atomic(tmp_path: Path) -> None:
    base = Base()
    base.extra = [lambda b: b.txn("D", [(IN, 0, "D-0"), (IN, 1, "D-1")], 5.0, 5.1, outcome="info")]
    base.finals[(IN, 0, False)] = [(0, "A-0"), (2, "B-0"), (4, "C-0"), (6, "D-0")]
    base.finals[(IN, 0, True)] = [(0, "A-0"), (4, "C-0"), (6, "D-0")]
    base.finals[(IN, 1, False)] = [(0, "A-1"), (2, "B-1"), (4, "D-1")]
    base.hws[(IN, 0)], base.hws[(IN, 1)] = 8, 6
    result = run(tmp_path, base)
    assert kinds(result) == {k.NON_ATOMIC_TRANSACTION}
    assert result.anomalies[0].details["transaction"] == "D"


def test_value_at_two_committed_offsets_is_a_duplicate(tmp_path: Path) -> None:
    base = Base()
    base.finals[(IN, 0, False)] = [(0, "A-0"), (2, "B-0"), (4, "C-0"), (6, "C-0")]
    base.finals[(IN, 0, True)] = [(0, "A-0"), (4, "C-0"), (6, "C-0")]
    base.hws[(IN, 0)] = 8
    result = run(tmp_path, base)
    assert k.DUPLICATE in kinds(result)


def test_input_with_two_committed_outputs_is_a_transform_duplicate(tmp_path: Path) -> None:
    """A zombie transform committed A-0's output again under another transaction."""
    base = Base()
    base.extra = [
        lambda b: b.txn(
            "T9",
            [(OUT, 0, "A-0|T9")],
            5.0,
            5.1,
            process="transform-1",
            group=GROUP,
            offsets=[(IN, 0, 1)],
            reads=[(IN, 0, 0, "A-0")],
        )
    ]
    base.finals[(OUT, 0, False)] = [(0, "A-0|T1"), (2, "C-0|T2"), (4, "A-0|T9")]
    base.finals[(OUT, 0, True)] = [(0, "A-0|T1"), (2, "C-0|T2"), (4, "A-0|T9")]
    base.hws[(OUT, 0)] = 6
    result = run(tmp_path, base)
    assert k.TRANSFORM_DUPLICATE in kinds(result)
    # T9 committed offset 1 after T2 committed 5: the offsets went back as well.
    assert k.OFFSET_REGRESSION in kinds(result)


def test_input_below_the_committed_offset_without_output_is_lost(tmp_path: Path) -> None:
    base = Base()
    base.finals[(OUT, 0, False)] = [(0, "A-0|T1")]
    base.finals[(OUT, 0, True)] = [(0, "A-0|T1")]
    base.hws[(OUT, 0)] = 2
    result = run(tmp_path, base)
    assert kinds(result) == {k.TRANSFORM_LOST, k.LOST_COMMITTED_WRITE}


def test_output_of_an_input_past_the_committed_offset_is_ahead(tmp_path: Path) -> None:
    base = Base()
    base.t2_offsets = [(IN, 0, 4)]  # T2 wrote C-0's output but committed the offset before it
    base.group_offsets = [(IN, 0, 4), (IN, 1, 1)]
    result = run(tmp_path, base)
    assert kinds(result) == {k.TRANSFORM_AHEAD}


def test_committed_offsets_moving_back_is_a_regression(tmp_path: Path) -> None:
    base = Base()
    base.group_offsets = [(IN, 0, 1), (IN, 1, 1)]  # the final offsets lost T2's commit
    result = run(tmp_path, base)
    assert k.OFFSET_REGRESSION in kinds(result)


def test_last_stable_offset_below_the_high_watermark_is_a_hanging_transaction(
    tmp_path: Path,
) -> None:
    base = Base()
    base.lso[(IN, 1)] = 2
    result = run(tmp_path, base)
    assert k.HANGING_TRANSACTION in kinds(result)


def test_committed_reader_jumping_over_a_committed_record_skips(tmp_path: Path) -> None:
    """Jumping over B's aborted record and the markers is fine (the base does it); jumping
    over A-0 is not."""
    base = Base()
    base.observer_committed = [(2.0, [(1, 0, "A-1")]), (4.0, [(0, 4, "C-0")])]
    result = run(tmp_path, base)
    assert kinds(result) == {k.SKIPPED_READ}


def test_value_no_transaction_wrote_is_an_unknown_read(tmp_path: Path) -> None:
    base = Base()
    base.observer_committed = [
        (2.0, [(0, 0, "A-0"), (1, 0, "A-1")]),
        (4.0, [(0, 4, "C-0"), (0, 6, "Z")]),
    ]
    result = run(tmp_path, base)
    assert k.UNKNOWN_READ in kinds(result)


def test_report_draws_every_transaction_on_its_lane(tmp_path: Path) -> None:
    result = run(tmp_path, Base())
    assert result.summary()["transactions"] == {"committed": 4, "aborted": 1, "unknown": 0}
    spans = {s.id: s for s in result.transactions}
    assert spans["B"].outcome == "aborted" and spans["B"].visible_at is None
    # A-0 was first seen by a read_committed poll at t=1.81 (the transform's).
    assert spans["A"].visible_at == pytest.approx(1.81)
    page = Path(write_report(result, tmp_path / "report")).read_text()
    section = page[page.index("<h2>Transactions</h2>") :]
    svg = ElementTree.fromstring(section[section.index("<svg") : section.index("</svg>") + 6])
    ns = "{http://www.w3.org/2000/svg}"
    bars = [r for r in svg.iter(f"{ns}rect") if r.find(f"{ns}title") is not None]
    titles = sorted(r.find(f"{ns}title").text for r in bars)
    assert titles == [
        "A: committed",
        "B: aborted",
        "C: committed",
        "T1: committed",
        "T2: committed",
    ]
    lanes = {t.text for t in svg.iter(f"{ns}text")}
    assert {"txn-producer-0", "transform-0"} <= lanes
