"""The checker on handcrafted histories: a clean run passes; each anomaly kind is caught."""

from __future__ import annotations

import json
import os
from xml.etree import ElementTree

import pytest

from chaos.checker import CheckResult, write_report
from chaos.checker import model as k
from tests.unit.chaos.history_builder import HistoryBuilder


def kinds(result: CheckResult) -> set[str]:
    return set(result.anomaly_counts)


def clean_history(b: HistoryBuilder) -> None:
    """Two partitions, a fault with heal, an assign consumer, a group, final reads."""
    b.leader(0, 1, 1, 0.0)
    b.leader(1, 1, 2, 0.0)
    b.assign("consumer-0", {0: 0, 1: 0}, 0.0)
    b.send("v0", 0, 0, 1.0, 1.1)
    b.send("v1", 1, 0, 1.2, 1.3)
    b.send("v2", 0, 1, 1.4, 1.5)
    b.poll("consumer-0", [(0, 0, "v0"), (0, 1, "v2"), (1, 0, "v1")], 2.0)
    b.at(3.0).nemesis_start("kill", [1], fault_id="k1")
    unknown = b.invoke_send("v3", 0, 3.1)  # outcome unknown: it did land (offset 2)
    b.send("v4", 1, None, 3.2, 3.3, outcome="fail")  # definitely not written
    b.leader(0, 2, 2, 3.5)
    b.at(5.0).info(unknown, {"error": "timeout"})
    b.at(6.0).nemesis_heal("kill", [1], fault_id="k1")
    b.send("v5", 0, 3, 6.5, 6.6)
    b.send("v6", 1, 1, 6.7, 6.8)
    b.poll("consumer-0", [(0, 2, "v3"), (0, 3, "v5"), (1, 1, "v6")], 7.0)
    b.assign("member-a", {0: None, 1: None}, 7.05, group="g")
    b.poll("member-a", [(0, 0, "v0"), (0, 1, "v2"), (1, 0, "v1")], 7.1)
    b.assign("member-a", {1: None}, 7.5, group="g")
    b.assign("member-b", {0: None}, 7.5, group="g")
    b.poll("member-b", [(0, 1, "v2"), (0, 2, "v3"), (0, 3, "v5")], 7.6)  # re-read: allowed
    b.poll("member-a", [(1, 1, "v6")], 7.7)
    b.final(0, 4, ["v0", "v2", "v3", "v5"], 8.0)
    b.final(1, 2, ["v1", "v6"], 8.1)


def test_clean_history_passes(tmp_path: os.PathLike[str]) -> None:
    b = HistoryBuilder(tmp_path)
    clean_history(b)
    result = b.check(liveness_window_s=5.0)
    assert result.anomaly_counts == {}
    assert result.valid
    assert result.ops["send"] == {"ok": 5, "fail": 1, "info": 1}
    assert [(w.fault, w.start, w.end) for w in result.fault_windows] == [("kill", 3.0, 6.0)]
    (recovery,) = result.recoveries
    assert recovery.heal_time == 6.0
    assert recovery.recovered_after_s == pytest.approx(0.8)
    assert result.checked_partitions == [("chaos", 0), ("chaos", 1)]


def test_lost_acknowledged_write(tmp_path: os.PathLike[str]) -> None:
    b = HistoryBuilder(tmp_path)
    b.send("v0", 0, 0, 1.0)
    b.send("v1", 0, 1, 2.0)
    b.final(0, 1, ["v0"], 3.0)  # the HW went below the acked offset 1
    result = b.check()
    assert kinds(result) == {k.LOST_WRITE}
    assert not result.valid
    (anomaly,) = result.anomalies
    assert anomaly.details["value"] == "v1"


def test_lost_write_below_highest_read_offset_without_final_read(
    tmp_path: os.PathLike[str],
) -> None:
    b = HistoryBuilder(tmp_path)
    b.send("v0", 0, 0, 1.0)
    b.send("v1", 0, 1, 1.1)
    b.send("v2", 0, 2, 1.2)
    b.poll("c", [(0, 0, "v0"), (0, 2, "v2")], 2.0)
    result = b.check()
    assert k.LOST_WRITE in kinds(result)
    assert k.SKIPPED_READ in kinds(result)  # the consumer jumped from 0 to 2


def test_acks1_loss_is_counted_but_not_a_violation(tmp_path: os.PathLike[str]) -> None:
    b = HistoryBuilder(tmp_path)
    b.send("v0", 0, 0, 1.0, acks="1")
    b.send("v1", 0, 0, 2.0)  # the acks=1 record was truncated; its offset reused
    b.final(0, 1, ["v1"], 3.0)
    result = b.check()
    assert kinds(result) == {k.LOST_WRITE_ACKS1}
    assert result.valid


def test_duplicate_value(tmp_path: os.PathLike[str]) -> None:
    b = HistoryBuilder(tmp_path)
    b.send("v0", 0, 0, 1.0)
    b.send("v1", 0, 1, 1.1)
    b.final(0, 3, ["v0", "v1", "v1"], 3.0)
    result = b.check()
    assert k.DUPLICATE in kinds(result)
    assert not result.valid


def test_duplicate_of_a_plain_producer_is_counted_not_a_violation(
    tmp_path: os.PathLike[str],
) -> None:
    b = HistoryBuilder(tmp_path)
    index = b.at(1.0).invoke(
        "plain-0", "send", {"value": "v0", "topic": "chaos", "partition": 0, "idempotent": False}
    )
    b.at(1.5).ok(index, {"offset": 1})  # the retry's answer; the first attempt landed at 0
    b.final(0, 2, ["v0", "v0"], 3.0)
    result = b.check()
    assert kinds(result) == {k.DUPLICATE_NON_IDEMPOTENT}
    assert result.valid


def test_inconsistent_offset_between_consumer_and_final_read(
    tmp_path: os.PathLike[str],
) -> None:
    b = HistoryBuilder(tmp_path)
    b.send("a", 0, None, 1.0, outcome="info")
    b.send("b", 0, None, 1.1, outcome="info")
    b.poll("c", [(0, 0, "a")], 2.0)
    b.final(0, 1, ["b"], 3.0)
    result = b.check()
    assert k.INCONSISTENT_OFFSET in kinds(result)


def test_acknowledged_offset_holds_another_value(tmp_path: os.PathLike[str]) -> None:
    b = HistoryBuilder(tmp_path)
    first = b.invoke_send("v0", 0, 1.0)
    second = b.invoke_send("v1", 0, 1.1, process="producer-1")
    b.ack(first, 0, 1.2)
    b.ack(second, 0, 1.3)  # acked at 0 as well: one of them cannot be there
    b.final(0, 2, ["v0", "v1"], 3.0)
    result = b.check()
    assert kinds(result) == {k.WRONG_OFFSET}
    (anomaly,) = result.anomalies
    assert anomaly.details["value"] == "v1"


def test_value_read_from_another_partition(tmp_path: os.PathLike[str]) -> None:
    b = HistoryBuilder(tmp_path)
    b.send("v0", 0, None, 1.0, outcome="info")
    b.final(1, 1, ["v0"], 3.0)
    assert k.WRONG_PARTITION in kinds(b.check())


def test_assign_consumer_going_back(tmp_path: os.PathLike[str]) -> None:
    b = HistoryBuilder(tmp_path)
    for i in range(3):
        b.send(f"v{i}", 0, i, 1.0 + i / 10)
    b.assign("c", {0: 0}, 1.5)
    b.poll("c", [(0, 0, "v0"), (0, 1, "v1")], 2.0)
    b.poll("c", [(0, 1, "v1"), (0, 2, "v2")], 2.1)
    b.final(0, 3, ["v0", "v1", "v2"], 3.0)
    result = b.check()
    assert kinds(result) == {k.NONMONOTONIC_READ}


def test_reassign_allows_reading_again(tmp_path: os.PathLike[str]) -> None:
    b = HistoryBuilder(tmp_path)
    for i in range(3):
        b.send(f"v{i}", 0, i, 1.0 + i / 10)
    b.assign("c", {0: 0}, 1.5)
    b.poll("c", [(0, 0, "v0"), (0, 1, "v1")], 2.0)
    b.assign("c", {0: 1}, 2.05)  # rebuilt consumer, seeks back to 1
    b.poll("c", [(0, 1, "v1"), (0, 2, "v2")], 2.1)
    b.final(0, 3, ["v0", "v1", "v2"], 3.0)
    assert b.check().anomaly_counts == {}


def test_assign_consumer_skipping_from_its_position(tmp_path: os.PathLike[str]) -> None:
    b = HistoryBuilder(tmp_path)
    for i in range(3):
        b.send(f"v{i}", 0, i, 1.0 + i / 10)
    b.assign("c", {0: 0}, 1.5)
    b.poll("c", [(0, 1, "v1"), (0, 2, "v2")], 2.0)  # never saw offset 0
    b.final(0, 3, ["v0", "v1", "v2"], 3.0)
    assert kinds(b.check()) == {k.SKIPPED_READ}


def test_group_may_reread_but_not_skip(tmp_path: os.PathLike[str]) -> None:
    b = HistoryBuilder(tmp_path)
    for i in range(6):
        b.send(f"v{i}", 0, i, 1.0 + i / 10)
    b.assign("a", {0: None}, 2.0, group="g")
    b.poll("a", [(0, 0, "v0"), (0, 1, "v1")], 2.1)
    b.assign("b", {0: None}, 2.5, group="g")
    b.poll("b", [(0, 1, "v1"), (0, 2, "v2")], 2.6)  # re-read of 1: fine
    b.poll("b", [(0, 4, "v4"), (0, 5, "v5")], 2.7)  # nobody in the group read 3
    b.final(0, 6, [f"v{i}" for i in range(6)], 3.0)
    result = b.check()
    assert kinds(result) == {k.SKIPPED_READ}
    (anomaly,) = result.anomalies
    assert anomaly.details["group"] == "g"
    assert anomaly.details["missing"] == [3, 3]


def test_final_read_short_of_high_watermark(tmp_path: os.PathLike[str]) -> None:
    b = HistoryBuilder(tmp_path)
    for i in range(3):
        b.send(f"v{i}", 0, None, 1.0 + i / 10, outcome="info")
    b.final(0, 3, ["v0", "v1"], 3.0)
    assert kinds(b.check()) == {k.INCOMPLETE_FINAL_READ}


def test_offsets_against_real_time(tmp_path: os.PathLike[str]) -> None:
    b = HistoryBuilder(tmp_path)
    b.send("early", 0, 1, 1.0, 1.5)
    b.send("late", 0, 0, 2.0, 2.5)  # began after "early" was acked, yet a lower offset
    b.final(0, 2, ["late", "early"], 3.0)
    result = b.check()
    assert kinds(result) == {k.REALTIME_ORDER}


def test_concurrent_sends_may_take_any_order(tmp_path: os.PathLike[str]) -> None:
    b = HistoryBuilder(tmp_path)
    first = b.invoke_send("x", 0, 1.0)
    second = b.invoke_send("y", 0, 1.1, process="producer-1")
    b.ack(first, 1, 1.5)
    b.ack(second, 0, 1.6)
    b.final(0, 2, ["y", "x"], 3.0)
    assert b.check().anomaly_counts == {}


def test_read_of_a_value_never_sent(tmp_path: os.PathLike[str]) -> None:
    b = HistoryBuilder(tmp_path)
    b.send("v0", 0, 0, 1.0)
    b.final(0, 2, ["v0", "ghost"], 3.0)
    assert kinds(b.check()) == {k.UNKNOWN_READ}


def test_read_of_a_failed_write(tmp_path: os.PathLike[str]) -> None:
    b = HistoryBuilder(tmp_path)
    b.send("v0", 0, None, 1.0, outcome="fail")
    b.final(0, 1, ["v0"], 3.0)
    assert kinds(b.check()) == {k.FAILED_WRITE_READ}


def test_read_before_the_send_began(tmp_path: os.PathLike[str]) -> None:
    b = HistoryBuilder(tmp_path)
    b.poll("c", [(0, 0, "v0")], 1.0)
    b.send("v0", 0, 0, 2.0)
    b.final(0, 1, ["v0"], 3.0)
    assert kinds(b.check()) == {k.FUTURE_READ}


def test_read_above_the_final_high_watermark(tmp_path: os.PathLike[str]) -> None:
    b = HistoryBuilder(tmp_path)
    b.send("v0", 0, 0, 1.0)
    b.send("v1", 0, None, 1.1, outcome="info")
    b.poll("c", [(0, 0, "v0"), (0, 1, "v1")], 2.0)
    b.final(0, 1, ["v0"], 3.0)  # v1 was served to a consumer, then truncated away
    assert kinds(b.check()) == {k.UNCOMMITTED_READ}


def test_two_leaders_in_one_epoch(tmp_path: os.PathLike[str]) -> None:
    b = HistoryBuilder(tmp_path)
    b.leader(0, 4, 1, 1.0)
    b.leader(0, 5, 2, 2.0)  # a new epoch, a new leader: fine
    b.leader(0, 5, 3, 2.5)  # ...but not two in epoch 5
    b.leader(0, 5, -1, 2.6)  # "no leader" is not a leader
    result = b.check()
    assert kinds(result) == {k.MULTIPLE_LEADERS}
    assert result.anomalies[0].details["epoch"] == 5


def test_no_write_succeeds_after_the_heal(tmp_path: os.PathLike[str]) -> None:
    b = HistoryBuilder(tmp_path)
    b.send("v0", 0, 0, 1.0)
    b.fault("partition", 2.0, 3.0)
    for i in range(1, 8):
        b.send(f"v{i}", 0, None, 2.0 + 2 * i, outcome="info")  # tried until t=16
    b.final(0, 1, ["v0"], 20.0)
    result = b.check(liveness_window_s=10.0)
    assert kinds(result) == {k.UNAVAILABLE_AFTER_HEAL}
    assert result.recoveries[0].recovered_after_s is None


def test_liveness_is_undecided_when_writes_stop_early(tmp_path: os.PathLike[str]) -> None:
    b = HistoryBuilder(tmp_path)
    b.fault("partition", 2.0, 3.0)
    b.send("v1", 0, None, 4.0, outcome="info")  # the run stopped writing 5 s after the heal
    b.final(0, 0, [], 20.0)
    result = b.check(liveness_window_s=10.0)
    assert result.anomaly_counts == {}
    assert any("not decidable" in note for note in result.notes)


def test_recovery_within_the_window(tmp_path: os.PathLike[str]) -> None:
    b = HistoryBuilder(tmp_path)
    b.fault("partition", 2.0, 3.0)
    b.send("v0", 0, None, 3.5, outcome="info")
    b.send("v1", 0, 0, 6.0, 7.0)
    b.final(0, 1, ["v1"], 20.0)
    result = b.check(liveness_window_s=10.0)
    assert result.anomaly_counts == {}
    assert result.recoveries[0].recovered_after_s == pytest.approx(4.0)


def test_liveness_is_undecided_when_a_new_fault_starts(tmp_path: os.PathLike[str]) -> None:
    b = HistoryBuilder(tmp_path)
    b.fault("kill", 2.0, 3.0, fault_id="a")
    b.send("v0", 0, None, 3.5, outcome="info")
    b.fault("pause", 5.0, 30.0, fault_id="b")
    b.send("v1", 0, 0, 31.0)
    b.final(0, 1, ["v1"], 40.0)
    result = b.check(liveness_window_s=10.0)
    assert result.anomaly_counts == {}
    assert any("not decidable" in note for note in result.notes)


def test_heal_all_closes_every_window(tmp_path: os.PathLike[str]) -> None:
    b = HistoryBuilder(tmp_path)
    b.at(1.0).nemesis_start("kill", [1], fault_id="x")
    b.at(2.0).nemesis_start("partition", [2, 3], fault_id="y")
    b.at(4.0).nemesis_heal("all")
    b.at(5.0).nemesis_start("pause", [3])  # never healed
    result = b.check()
    windows = {(w.fault, w.end) for w in result.fault_windows}
    assert windows == {("kill", 4.0), ("partition", 4.0), ("pause", None)}


def test_only_the_first_anomalies_of_a_kind_are_kept(tmp_path: os.PathLike[str]) -> None:
    b = HistoryBuilder(tmp_path)
    b.final(0, 5, [f"ghost{i}" for i in range(5)], 1.0)
    result = b.check(max_anomalies_per_kind=2)
    assert result.anomaly_counts == {k.UNKNOWN_READ: 5}
    assert len(result.anomalies) == 2
    assert any("first 2 kept" in note for note in result.notes)


def test_report_folder(tmp_path: os.PathLike[str]) -> None:
    b = HistoryBuilder(tmp_path, name="run.jsonl")
    clean_history(b)
    b.send("lost", 1, 2, 9.0)
    result = b.check(seed=42)
    out = os.path.join(os.fspath(tmp_path), "artifacts")
    report = write_report(result, out)
    assert sorted(os.listdir(out)) == [
        "anomalies.json",
        "history.jsonl",
        "report.html",
        "seed",
        "summary.json",
        "timeline.json",
    ]
    with open(os.path.join(out, "seed")) as f:
        assert f.read().strip() == "42"
    with open(os.path.join(out, "anomalies.json")) as f:
        anomalies = json.load(f)
    assert anomalies["counts"] == {k.LOST_WRITE: 1}
    with open(os.path.join(out, "summary.json")) as f:
        summary = json.load(f)
    assert summary["valid"] is False
    assert summary["sends"] == {"ok": 6, "failed": 1, "unknown": 1}
    with open(report, encoding="utf-8") as f:
        page = f.read()
    assert "INVALID" in page
    assert page.count("<svg") == 3
    for chunk in page.split("<svg")[1:]:  # each chart is well-formed SVG
        svg = ElementTree.fromstring("<svg" + chunk.split("</svg>")[0] + "</svg>")
        assert svg.findall("{http://www.w3.org/2000/svg}polyline")
    assert "<title>kill 1: 3.0s to 6.0s</title>" in page  # the shaded fault window
    assert "src=" not in page and "href=" not in page  # self-contained


def test_command_line(tmp_path: os.PathLike[str], capsys: pytest.CaptureFixture[str]) -> None:
    from chaos.checker.__main__ import main

    clean = HistoryBuilder(tmp_path, name="clean.jsonl")
    clean_history(clean)
    clean.writer.close()
    assert main([clean.path, "--liveness-window-s", "5"]) == 0
    assert json.loads(capsys.readouterr().out)["valid"] is True

    lossy = HistoryBuilder(tmp_path, name="lossy.jsonl")
    lossy.send("v0", 0, 0, 1.0)
    lossy.final(0, 0, [], 2.0)
    lossy.writer.close()
    out = os.path.join(os.fspath(tmp_path), "out")
    assert main([lossy.path, "--artifacts", out, "--seed", "3"]) == 1
    assert json.loads(capsys.readouterr().out)["anomalies"] == {k.LOST_WRITE: 1}
    assert os.path.exists(os.path.join(out, "report.html"))

    broken = os.path.join(os.fspath(tmp_path), "broken.jsonl")
    with open(broken, "w", encoding="utf-8") as f:
        f.write("not json\n{}\n")
    assert main([broken]) == 2
    assert main([os.path.join(os.fspath(tmp_path), "missing.jsonl")]) == 2


def test_timeline_buckets(tmp_path: os.PathLike[str]) -> None:
    b = HistoryBuilder(tmp_path)
    b.send("a", 0, 0, 0.1, 0.3)  # 200 ms
    b.send("b", 0, 1, 0.5, 0.6)  # 100 ms
    stuck = b.invoke_send("c", 0, 0.8)  # waits through buckets 1 and 2
    b.send("d", 0, None, 1.2, 1.4, outcome="fail")
    b.at(3.5).info(stuck, {"error": "timeout"})
    b.final(0, 2, ["a", "b"], 4.2)
    result = b.check()
    first, second, third, fourth, _ = result.timeline
    assert (first.invoked, first.ok, first.latency_max_ms) == (3, 2, pytest.approx(200))
    assert first.latency_p50_ms == pytest.approx(100)
    assert first.availability == 1.0 and first.throughput_per_s == 2.0
    assert (second.fail, second.availability) == (1, 0.0)
    assert (third.in_flight, third.availability) == (1, 0.0)  # waiting, nothing answered
    assert (fourth.info, fourth.availability) == (1, 0.0)
    assert result.timeline[-1].availability is None  # nothing tried


def test_ack_without_an_offset_is_still_held_to_its_value(tmp_path: os.PathLike[str]) -> None:
    b = HistoryBuilder(tmp_path)
    b.send("kept", 0, -1, 1.0)
    b.send("gone", 0, -1, 2.0)
    b.final(0, 1, ["kept"], 3.0)
    result = b.check()
    assert kinds(result) == {k.LOST_WRITE}
    assert result.anomalies[0].details["value"] == "gone"
