from __future__ import annotations

import re

import pytest

from common.configdef import ConfigError, describe, from_props
from raft.config import RaftConfig, parse_voters

GOOD = {
    "node.id": "2",
    "controller.quorum.voters": "1@127.0.0.1:9093, 2@host-b:9093,3@10.0.0.3:19093",
    "metadata.log.dir": "/var/lib/kraftlog/meta",
    "controller.quorum.secret": "s3cret",
}


def test_voters_are_parsed_into_a_mapping() -> None:
    config = from_props(RaftConfig, GOOD)
    assert config.voters == {
        1: ("127.0.0.1", 9093),
        2: ("host-b", 9093),
        3: ("10.0.0.3", 19093),
    }
    assert config.address_of(2) == "host-b:9093"
    config.validate_for_controller()


@pytest.mark.parametrize(
    "voters",
    [
        "1@host",
        "x@host:1",
        "1host:9",
        "1@:9093",
        "1@h:0",
        "1@h:99999",
        "1@h:1,1@g:2",
        "1@h:1,2@h:1",
    ],
)
def test_bad_voter_syntax_names_the_key(voters: str) -> None:
    with pytest.raises(ConfigError, match=re.escape("controller.quorum.voters")):
        from_props(RaftConfig, {**GOOD, "controller.quorum.voters": voters})


@pytest.mark.parametrize(
    ("change", "key"),
    [
        ({"controller.quorum.secret": ""}, "controller.quorum.secret"),
        ({"node.id": "7"}, "node.id"),
        ({"metadata.log.dir": ""}, "metadata.log.dir"),
        ({"controller.quorum.voters": "1@h:1,2@h:2"}, "controller.quorum.voters"),
        ({"controller.quorum.voters": ""}, "controller.quorum.voters"),
        (
            {
                "controller.quorum.election.timeout.ms": "100",
                "controller.quorum.append.interval.ms": "40",
            },
            "controller.quorum.append.interval.ms",
        ),
    ],
)
def test_a_controller_refuses_incomplete_configs(change: dict[str, str], key: str) -> None:
    config = from_props(RaftConfig, {k: v for k, v in {**GOOD, **change}.items() if v != ""})
    with pytest.raises(ConfigError, match=re.escape(key)):
        config.validate_for_controller()


def test_every_property_is_documented() -> None:
    rows = describe(RaftConfig)
    assert {k for k, _, _ in rows} >= {
        "node.id",
        "controller.quorum.voters",
        "metadata.log.dir",
        "controller.quorum.secret",
        "controller.quorum.election.timeout.ms",
        "controller.quorum.append.interval.ms",
        "metadata.log.max.tail.records",
        "metadata.log.append.timeout.ms",
    }
    assert all(doc for _, _, doc in rows)


def test_parse_voters_ignores_blank_items() -> None:
    assert parse_voters("1@a:1,,") == {1: ("a", 1)}
