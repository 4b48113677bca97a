"""Membership entries: their encoding, the voter set a journal's entries put in force, and its
survival across truncation, compaction, a dump and a reopened journal."""

from __future__ import annotations

import os
import pickle
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from common.configdef import ConfigError, from_props
from raft.config import RAFT_ADDRESS_KEY, RaftConfig
from raft.dump import DumpContents, read_dump, write_dump
from raft.journal import DurableJournal
from raft.membership import (
    OP_ADD,
    OP_REMOVE,
    MembershipChange,
    MembershipError,
    MembershipHistory,
    voters_text,
)

BASE = {1: "h:1", 2: "h:2", 3: "h:3"}


def add(node_id: int, voters: dict[int, str]) -> MembershipChange:
    return MembershipChange.of(OP_ADD, node_id, f"h:{node_id}", {**voters, node_id: f"h:{node_id}"})


def remove(node_id: int, voters: dict[int, str]) -> MembershipChange:
    rest = {i: a for i, a in voters.items() if i != node_id}
    return MembershipChange.of(OP_REMOVE, node_id, voters[node_id], rest)


def test_a_change_round_trips_and_reads_as_pysyncobj_expects() -> None:
    change = add(4, BASE)
    assert MembershipChange.decode(change.command()) == change
    # pysyncobj reads [op, node id, node] from the same body.
    fields = pickle.loads(change.body())
    assert fields[:3] == ["add", "h:4", "h:4"]
    assert change.voter_set == {1: "h:1", 2: "h:2", 3: "h:3", 4: "h:4"}
    assert MembershipChange.decode(b"\x01anything") is None
    assert voters_text(change.voter_set) == "1@h:1,2@h:2,3@h:3,4@h:4"


class _Evil:
    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (os.system, ("true",))


@pytest.mark.parametrize(
    "body",
    [
        pickle.dumps(_Evil()),
        pickle.dumps(["add", "h:4", "h:4", 4, [[4, _Evil()]]]),
        pickle.dumps(["move", "h:4", "h:4", 4, []]),
        pickle.dumps(["add", "h:4", "h:4", "4", []]),
        pickle.dumps(["add", "h:4", "h:4", 4, [[4]]]),
        pickle.dumps({"op": "add"}),
        b"\x80\x04garbage",
        b"",
    ],
)
def test_a_malformed_or_class_naming_body_is_refused(body: bytes) -> None:
    with pytest.raises(MembershipError):
        MembershipChange.decode(b"\x02" + body)


@given(st.binary(max_size=300))
def test_arbitrary_bytes_never_escape_as_another_exception(body: bytes) -> None:
    try:
        MembershipChange.decode(b"\x02" + body)
    except MembershipError:
        pass


def test_the_latest_entry_is_in_force_from_append_until_truncated() -> None:
    history = MembershipHistory(BASE)
    four = add(4, BASE)
    history.on_append(b"\x01regular", 5)
    history.on_append(four.command(), 6)
    assert history.current() == four.voter_set
    assert history.as_of(5) == BASE
    assert history.latest_change_index == 6
    without_one = remove(1, four.voter_set)
    history.on_append(without_one.command(), 9)
    assert history.current() == {2: "h:2", 3: "h:3", 4: "h:4"}
    version = history.version
    history.truncate_from(9)  # a new leader's log does not have it
    assert history.current() == four.voter_set
    assert history.version > version
    history.compact_before(7)  # the journal head went into a dump
    assert history.latest_change_index is None
    assert history.current() == four.voter_set
    history.set_base(BASE, 10)  # a dump from the leader replaces everything
    assert history.current() == BASE


def test_a_malformed_entry_is_ignored_identically_everywhere() -> None:
    history = MembershipHistory(BASE)
    history.on_append(b"\x02not a pickle", 3)
    assert history.current() == BASE


def test_the_journal_keeps_the_history_in_step_and_across_a_reopen(tmp_path: Path) -> None:
    journal_path, meta_path = str(tmp_path / "j.log"), str(tmp_path / "m.json")
    journal = DurableJournal(journal_path, meta_path)
    history = MembershipHistory(BASE)
    journal.attach_membership(history)
    four = add(4, BASE)
    journal.add(b"\x00noop", 1, 1)
    journal.add(four.command(), 2, 1)
    journal.add(b"\x01cmd", 3, 1)
    removal = remove(2, four.voter_set)
    journal.add(removal.command(), 4, 1)
    assert history.current() == removal.voter_set
    journal.deleteEntriesFrom(3)  # position 3 = index 4
    assert history.current() == four.voter_set
    journal.add(removal.command(), 4, 2)
    journal.sync()
    journal._destroy()

    reopened = DurableJournal(journal_path, meta_path)
    again = MembershipHistory(BASE)
    reopened.attach_membership(again)
    assert again.current() == removal.voter_set
    reopened.deleteEntriesTo(3)  # compaction: the changes before index 4 fold into the base
    assert again.current() == removal.voter_set
    assert again.as_of(3) == four.voter_set
    reopened.clear()
    assert again.current() == four.voter_set  # the folded base stays until a dump sets one
    reopened._destroy()


def test_the_dump_carries_the_voter_set(tmp_path: Path) -> None:
    path = str(tmp_path / "dump.bin")
    voters = {1: "h:1", 4: "h:4"}
    write_dump(path, DumpContents({}, (b"a", 2, 1), (b"b", 1, 1), ["h:1", "h:4"], voters))
    assert read_dump(path).voters == voters
    write_dump(path, DumpContents({}, (b"a", 2, 1), (b"b", 1, 1), ["h:1"]))
    assert read_dump(path).voters is None  # a dump from before dynamic membership


GOOD = {
    "node.id": "4",
    "controller.quorum.voters": "1@127.0.0.1:9093,2@127.0.0.1:9094,3@127.0.0.1:9095",
    "metadata.log.dir": "/var/lib/kraftlog/meta",
    "controller.quorum.secret": "s3cret",
}


def test_a_joining_controller_needs_its_own_raft_address() -> None:
    config = from_props(RaftConfig, {**GOOD, "controller.quorum.raft.address": "127.0.0.1:9096"})
    config.validate_for_controller()
    assert config.own_address == "127.0.0.1:9096"
    with pytest.raises(ConfigError, match=re.escape(RAFT_ADDRESS_KEY)):
        from_props(RaftConfig, GOOD).validate_for_controller()
    # A joining controller may list an even number of voters (mid-replacement).
    even = {**GOOD, "controller.quorum.voters": "1@127.0.0.1:9093,2@127.0.0.1:9094"}
    from_props(
        RaftConfig, {**even, "controller.quorum.raft.address": "127.0.0.1:9096"}
    ).validate_for_controller()
    # A listed voter's address must agree with the list.
    mismatch = {**GOOD, "node.id": "1", "controller.quorum.raft.address": "127.0.0.1:9999"}
    with pytest.raises(ConfigError, match="differs"):
        from_props(RaftConfig, mismatch).validate_for_controller()
    with pytest.raises(ConfigError, match=re.escape(RAFT_ADDRESS_KEY)):
        from_props(RaftConfig, {**GOOD, "controller.quorum.raft.address": "nohost"})
