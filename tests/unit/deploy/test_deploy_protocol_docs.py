"""The API/version tables of docs/broker.md and docs/protocol.md are generated from the code
(the broker's handlers and the codec) and must be up to date."""

from __future__ import annotations

from data_plane.broker.handlers import advertised
from deploy import gen_protocol_docs


def test_committed_api_tables_match_the_code() -> None:
    for path, text in gen_protocol_docs.rendered().items():
        assert path.read_text(encoding="utf-8") == text, (
            f"{path.name} is stale: run `python -m deploy.gen_protocol_docs`"
        )


def test_every_served_api_is_in_the_broker_table_with_its_versions() -> None:
    table = gen_protocol_docs.broker_table()
    for key, (lo, hi) in advertised().items():
        versions = f"{lo}-{hi}" if lo != hi else str(lo)
        assert f"({int(key)}) | {versions} |" in table, key
