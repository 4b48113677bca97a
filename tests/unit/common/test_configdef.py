"""common.configdef: Kafka-named properties onto typed dataclasses."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from hypothesis import given
from hypothesis import strategies as st

from common import configdef
from common.configdef import ConfigError, prop


@dataclass(frozen=True)
class SampleConfig:
    segment_bytes: int = field(
        default=1024, metadata=prop("log.segment.bytes", topic="segment.bytes", min=14)
    )
    ratio: float = field(default=0.5, metadata=prop("min.cleanable.dirty.ratio", min=0, max=1))
    preallocate: bool = field(default=False, metadata=prop("log.preallocate"))
    policy: tuple[str, ...] = field(
        default=("delete",),
        metadata=prop("log.cleanup.policy", topic="cleanup.policy", choices=("delete", "compact")),
    )
    rack: str | None = field(default=None, metadata=prop("broker.rack"))
    name: str = field(default="x", metadata=prop("client.id"))


def test_parse_properties_handles_comments_separators_and_continuations() -> None:
    text = "# comment\n! other\n\na=1\nb : two\nc=x\\\n  y\n"
    assert configdef.parse_properties(text) == {"a": "1", "b": "two", "c": "xy"}


def test_parse_properties_rejects_a_line_without_separator() -> None:
    with pytest.raises(ConfigError, match=r"conf:2: expected key=value"):
        configdef.parse_properties("a=1\nnonsense\n", source="conf")


def test_from_props_coerces_each_type() -> None:
    cfg = configdef.from_props(
        SampleConfig,
        {
            "log.segment.bytes": "2048",
            "min.cleanable.dirty.ratio": "0.25",
            "log.preallocate": "TRUE",
            "log.cleanup.policy": "compact, delete",
            "broker.rack": "r1",
            "unrelated.key": "ignored",
        },
    )
    assert cfg == SampleConfig(2048, 0.25, True, ("compact", "delete"), "r1", "x")


@pytest.mark.parametrize(
    ("props", "message"),
    [
        ({"log.segment.bytes": "abc"}, "log.segment.bytes: expected an integer"),
        ({"log.segment.bytes": "10"}, "below the minimum 14"),
        ({"min.cleanable.dirty.ratio": "2"}, "above the maximum 1"),
        ({"log.preallocate": "yes"}, "expected true or false"),
        ({"log.cleanup.policy": "shred"}, "'shred' is not one of delete, compact"),
    ],
)
def test_bad_values_name_the_key(props: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        configdef.from_props(SampleConfig, props)


def test_topic_overrides_use_topic_names() -> None:
    base = SampleConfig(segment_bytes=4096)
    cfg = configdef.with_overrides(
        base, {"segment.bytes": "100", "log.segment.bytes": "9"}, topic=True
    )
    assert cfg.segment_bytes == 100
    assert configdef.known_keys(SampleConfig, topic=True) == {"segment.bytes", "cleanup.policy"}


def test_optional_accepts_empty_as_none() -> None:
    assert configdef.from_props(SampleConfig, {"broker.rack": ""}).rack is None


@given(
    st.integers(min_value=14, max_value=2**40),
    st.booleans(),
    st.lists(st.sampled_from(["delete", "compact"]), min_size=1, max_size=2).map(tuple),
)
def test_to_props_round_trips(
    segment_bytes: int, preallocate: bool, policy: tuple[str, ...]
) -> None:
    cfg = SampleConfig(segment_bytes=segment_bytes, preallocate=preallocate, policy=policy)
    assert configdef.from_props(SampleConfig, configdef.to_props(cfg)) == cfg


def test_describe_lists_defaults() -> None:
    rows = {key: default for key, default, _ in configdef.describe(SampleConfig)}
    assert rows["log.segment.bytes"] == "1024"
    assert rows["log.cleanup.policy"] == "delete"
