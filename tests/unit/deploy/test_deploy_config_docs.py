"""docs/configuration.md is generated from the config dataclasses and must be up to date."""

from __future__ import annotations

from deploy import gen_config_docs
from deploy.node_config import all_known_keys


def test_committed_configuration_reference_matches_the_dataclasses() -> None:
    committed = gen_config_docs.DOC_PATH.read_text(encoding="utf-8")
    assert committed == gen_config_docs.render(), (
        "docs/configuration.md is stale: run `python -m deploy.gen_config_docs`"
    )


def test_every_accepted_key_is_documented() -> None:
    text = gen_config_docs.render()
    for key in all_known_keys():
        assert f"| `{key}` |" in text, key
