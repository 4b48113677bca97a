"""The client configuration tables of docs/client.md are generated from the client's config
dataclasses and must be up to date."""

from __future__ import annotations

from pathlib import Path

import pytest

from common.configdef import describe
from deploy import gen_client_docs


def test_committed_client_tables_match_the_dataclasses() -> None:
    committed = gen_client_docs.CLIENT_DOC.read_text(encoding="utf-8")
    assert committed == gen_client_docs.render(committed), (
        f"docs/client.md is stale: run `{gen_client_docs.REGENERATE}`"
    )


def test_every_key_appears_with_its_default() -> None:
    text = gen_client_docs.render(gen_client_docs.CLIENT_DOC.read_text(encoding="utf-8"))
    for cls in gen_client_docs.CLASSES:
        for key, default, _doc in describe(cls):
            shown = default if default != "" else "(unset)"
            assert f"| `{key}` | {shown} |" in text, (cls.__name__, key)


def test_only_the_text_between_the_markers_is_rewritten() -> None:
    page = f"# Client\n\nintro\n\n{gen_client_docs.BEGIN}\nold table\n{gen_client_docs.END}\ntail\n"
    out = gen_client_docs.render(page)
    assert out.startswith("# Client\n\nintro\n\n")
    assert out.endswith(f"{gen_client_docs.END}\ntail\n")
    assert "old table" not in out and "### ProducerConfig" in out


def test_missing_markers_are_reported() -> None:
    with pytest.raises(SystemExit, match="markers"):
        gen_client_docs.render("# no markers\n")


def test_check_mode_reports_a_stale_page(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    page = tmp_path / "client.md"
    page.write_text(f"{gen_client_docs.BEGIN}\nstale\n{gen_client_docs.END}\n", encoding="utf-8")
    monkeypatch.setattr(gen_client_docs, "CLIENT_DOC", page)
    assert gen_client_docs.main(["--check"]) == 1
    assert gen_client_docs.REGENERATE in capsys.readouterr().out
    assert gen_client_docs.main([]) == 0
    assert gen_client_docs.main(["--check"]) == 0
