"""The API/version tables of docs/broker.md and docs/protocol.md are generated from the code
(the broker's handlers, the codec, the native client) and must be up to date."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from common.protocol.api_keys import SUPPORTED_VERSIONS, ApiKey
from data_plane.broker.handlers import HANDLERS, advertised
from deploy import gen_protocol_docs
from kraftlog_client.broker_connection import CLIENT_VERSIONS


def _row(table: str, key: ApiKey) -> list[str]:
    prefix = f"| {gen_protocol_docs.api_name(key)} ({int(key)}) |"
    rows = [line for line in table.splitlines() if line.startswith(prefix)]
    assert len(rows) == 1, (key, rows)
    return [cell.strip() for cell in rows[0].strip("|").split("|")]


def test_committed_api_tables_match_the_code() -> None:
    for path, text in gen_protocol_docs.rendered().items():
        assert path.read_text(encoding="utf-8") == text, (
            f"{path.name} is stale: run `{gen_protocol_docs.REGENERATE}`"
        )


def test_broker_table_lists_exactly_the_advertised_apis_with_their_handlers() -> None:
    table = gen_protocol_docs.broker_table()
    served = advertised()
    body = table.splitlines()[2:]
    assert len(body) == len(served)
    for key, (lo, hi) in served.items():
        row = _row(table, key)
        assert row[1] == (f"{lo}-{hi}" if lo != hi else str(lo)), key
        module_path = HANDLERS[key].handler.__module__.replace(".", "/") + ".py"
        assert Path(module_path).name in row[2], key


def test_protocol_table_lists_every_codec_api_beside_broker_and_client() -> None:
    table = gen_protocol_docs.protocol_table()
    served = advertised()
    assert len(table.splitlines()[2:]) == len(SUPPORTED_VERSIONS)
    for key, span in SUPPORTED_VERSIONS.items():
        row = _row(table, key)
        assert row[1:] == [
            gen_protocol_docs.versions(span),
            gen_protocol_docs.versions(served.get(key)),
            gen_protocol_docs.versions(CLIENT_VERSIONS.get(key)),
        ], key


def test_a_served_api_the_codec_serves_lower_than_it_knows_shows_both_ranges(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # An API served from v3 only (as Produce is) shows both ranges.
    api = dataclasses.replace(HANDLERS[ApiKey.DESCRIBE_CONFIGS], min_version=3)
    monkeypatch.setitem(HANDLERS, ApiKey.DESCRIBE_CONFIGS, api)
    row = _row(gen_protocol_docs.protocol_table(), ApiKey.DESCRIBE_CONFIGS)
    assert row[1:3] == ["0-4", "3-4"]


def test_a_note_for_an_api_the_broker_does_not_serve_is_refused() -> None:
    with pytest.raises(ValueError, match="CreateDelegationToken"):
        gen_protocol_docs.broker_table({ApiKey.CREATE_DELEGATION_TOKEN: "a note for nothing"})


def test_missing_markers_are_reported() -> None:
    with pytest.raises(SystemExit, match="markers"):
        gen_protocol_docs.render("# no markers here\n", "| table |", Path("x.md"))


def test_check_mode_reports_stale_files_and_the_command(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    stale = {gen_protocol_docs.BROKER_DOC: "not what is committed\n"}
    monkeypatch.setattr(gen_protocol_docs, "rendered", lambda: stale)
    assert gen_protocol_docs.main(["--check"]) == 1
    out = capsys.readouterr().out
    assert "broker.md" in out and gen_protocol_docs.REGENERATE in out
