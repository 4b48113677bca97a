from __future__ import annotations

import importlib
import inspect
import warnings

from common.error_codes import ErrorCode, error_for_code, error_name, is_retriable


def test_codes_named_as_kafka() -> None:
    assert ErrorCode.NOT_LEADER_OR_FOLLOWER == 6
    assert ErrorCode.UNKNOWN_TOPIC_OR_PARTITION == 3
    assert ErrorCode.CORRUPT_MESSAGE == 2
    assert ErrorCode.INVALID_REPLICATION_FACTOR == 38
    assert ErrorCode.TOPIC_ALREADY_EXISTS == 36
    assert ErrorCode.INVALID_PARTITIONS == 37
    assert ErrorCode.INVALID_TOPIC_EXCEPTION == 17
    assert ErrorCode.NOT_CONTROLLER == 41
    assert ErrorCode.STALE_BROKER_EPOCH == 77
    assert ErrorCode.FENCED_LEADER_EPOCH == 74
    assert ErrorCode.UNKNOWN_LEADER_EPOCH == 75
    assert ErrorCode.INVALID_UPDATE_VERSION == 95
    assert ErrorCode.INVALID_CONFIG == 40
    assert ErrorCode.POLICY_VIOLATION == 44
    assert error_for_code(6).name == "NOT_LEADER_OR_FOLLOWER"
    assert ErrorCode.NOT_LEADER_FOR_PARTITION is ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert ErrorCode.INVALID_REPLICATION_ASSIGNMENT is ErrorCode.INVALID_REPLICA_ASSIGNMENT
    assert error_for_code(39).name == "INVALID_REPLICA_ASSIGNMENT"


def test_table_matches_kafka_python_codes_and_retriable_flags() -> None:
    with warnings.catch_warnings():  # kafka-python's import uses deprecated importlib APIs
        warnings.simplefilter("ignore", DeprecationWarning)
        kerrors = importlib.import_module("kafka.errors")
    theirs = {
        cls.errno: cls.retriable
        for cls in vars(kerrors).values()
        if inspect.isclass(cls)
        and issubclass(cls, kerrors.BrokerResponseError)
        and cls.errno is not None
    }
    for code in range(-1, 101):
        assert code in theirs, code
        assert error_for_code(code) == code
        assert is_retriable(code) is theirs[code], code


def test_unknown_codes() -> None:
    assert error_for_code(31337) is ErrorCode.UNKNOWN_SERVER_ERROR
    assert not is_retriable(31337)
    assert error_name(31337) == "UNKNOWN_SERVER_ERROR(31337)"
    assert error_name(41) == "NOT_CONTROLLER"
