"""PartitionFetchState with scripted inputs, no I/O: truncation before fetching, going back to
truncation, restarting behind the leader's log start, delays after partition errors, and
illegal transitions."""

from __future__ import annotations

import pytest

from common.error_codes import ErrorCode
from data_plane.replication.fetch_state import (
    METADATA_LAG_RETRY_MS,
    FetchState,
    FetchStateError,
    PartitionFetchState,
    retry_delay_s,
)

BACKOFF_MS = 1000


def test_a_new_state_truncates_before_it_fetches() -> None:
    s = PartitionFetchState(leader_id=2, leader_epoch=5)
    assert s.ready_to_truncate(0.0) and not s.ready_to_fetch(0.0)
    s.truncation_completed()
    assert s.state is FetchState.FETCHING
    assert s.ready_to_fetch(0.0) and not s.ready_to_truncate(0.0)


def test_a_failed_append_goes_back_to_truncation() -> None:
    s = PartitionFetchState(2, 5, FetchState.FETCHING)
    s.append_failed()
    assert s.state is FetchState.TRUNCATING


def test_out_of_range_behind_the_leader_restarts_the_log_at_its_start() -> None:
    s = PartitionFetchState(2, 5, FetchState.FETCHING)
    assert s.offset_out_of_range(fetch_offset=10, leader_log_start_offset=500) == 500
    assert s.state is FetchState.FETCHING


def test_out_of_range_ahead_of_the_leader_truncates_again() -> None:
    s = PartitionFetchState(2, 5, FetchState.FETCHING)
    assert s.offset_out_of_range(fetch_offset=900, leader_log_start_offset=0) is None
    assert s.state is FetchState.TRUNCATING
    s2 = PartitionFetchState(2, 5, FetchState.FETCHING)
    assert s2.offset_out_of_range(fetch_offset=3, leader_log_start_offset=-1) is None


@pytest.mark.parametrize(
    ("code", "delay_s", "unexpected"),
    [
        (ErrorCode.UNKNOWN_LEADER_EPOCH, METADATA_LAG_RETRY_MS / 1000, False),
        (ErrorCode.NOT_LEADER_OR_FOLLOWER, METADATA_LAG_RETRY_MS / 1000, False),
        (ErrorCode.FENCED_LEADER_EPOCH, BACKOFF_MS / 1000, False),
        (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, BACKOFF_MS / 1000, False),
        (ErrorCode.KAFKA_STORAGE_ERROR, BACKOFF_MS / 1000, True),
    ],
)
def test_partition_errors_delay_the_partition(code, delay_s, unexpected) -> None:
    s = PartitionFetchState(2, 5, FetchState.FETCHING)
    assert s.partition_error(code, 100.0, BACKOFF_MS) is unexpected
    assert not s.ready_to_fetch(100.0 + delay_s - 0.001)
    assert s.ready_to_fetch(100.0 + delay_s)
    assert s.state is FetchState.FETCHING


def test_a_truncating_partition_is_delayed_too() -> None:
    s = PartitionFetchState(2, 5)
    s.partition_error(ErrorCode.NOT_LEADER_OR_FOLLOWER, 10.0, BACKOFF_MS)
    assert not s.ready_to_truncate(10.0)
    assert s.ready_to_truncate(10.0 + retry_delay_s(ErrorCode.NOT_LEADER_OR_FOLLOWER, BACKOFF_MS))


def test_the_metadata_lag_delay_never_exceeds_the_backoff() -> None:
    assert retry_delay_s(ErrorCode.UNKNOWN_LEADER_EPOCH, 10) == 0.01


def test_illegal_transitions_raise_and_change_nothing() -> None:
    fetching = PartitionFetchState(2, 5, FetchState.FETCHING)
    with pytest.raises(FetchStateError):
        fetching.truncation_completed()
    assert fetching.state is FetchState.FETCHING
    truncating = PartitionFetchState(2, 5)
    for call in (truncating.append_failed, lambda: truncating.offset_out_of_range(1, 5)):
        with pytest.raises(FetchStateError):
            call()
        assert truncating.state is FetchState.TRUNCATING
    with pytest.raises(FetchStateError):
        truncating.partition_error(ErrorCode.NO_ERROR, 0.0, BACKOFF_MS)
    assert truncating.delayed_until_s == 0.0
