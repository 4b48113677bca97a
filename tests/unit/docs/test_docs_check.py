"""The docs check of .ci/check_docs.py: history words in Markdown prose and in Python
docstrings and comments are findings; code, string literals and format constants are not."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

_SCRIPT = Path(__file__).resolve().parents[3] / ".ci" / "check_docs.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("check_docs", _SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


check_docs = _load()


def _rules(findings: list[tuple[int, str, str]]) -> list[str]:
    return [rule for _line, rule, _text in findings]


@pytest.mark.parametrize(
    ("line", "rule"),
    [
        ("Measured in session 3 on a quiet machine.", "session number"),
        ("### Session 4 (2026-11-22)", "session number"),
        ("Done for issue 9.", "issue number"),
        ("The fix of issue #12 keeps the ISR.", "issue number"),
        ("Fixed in #42.", "issue reference #N"),
        ("The targets of the issue's list.", "the issue"),
        ("All runs of stop 2 were clean.", "stop number"),
        ("## Stop 3", "stop number"),
        ("Wave 1 served the old versions.", "wave number"),
        ("Before this session's changes the p99 was 10 ms.", "history of this work"),
        ("The old code ran from commit 400cf5a.", "commit hash"),
        ("The bug landed in a3e5b27 and was fixed.", "commit hash"),
        ("Fix (1df0812): markers first.", "bare commit hash"),
        ("Other helpers ran their test suites meanwhile.", "machine tenants"),
        ("The machine had six tenants.", "machine tenants"),
        ("Best of 7: the machine is shared.", "machine tenants"),
    ],
)
def test_history_in_markdown_prose_is_a_finding(line: str, rule: str) -> None:
    found = check_docs.scan_markdown(f"# Title\n\n{line}\n")
    assert rule in _rules(found)
    assert all(number == 3 for number, _rule, _text in found)


@pytest.mark.parametrize(
    "text",
    [
        "A fetch session caches the partitions of this session.",
        "The helpers in `common/durable.py` write atomically.",
        "CRC-32C of the batch; Kafka's magic byte is 2.",
        "Offsets 0-9 of partition 3; see [storage](storage.md#recovery).",
        "The header `0x1a2b3c4d5e` is a hex dump in a code span: `deadbeef12`.",
        "Stop the cluster with `make stop`; it stops 3 brokers.",
        "```\ncommit 400cf5a in a code block\n```",
        "    kraftlog log dump 00000000000000000000.log   # indented command, session 1",
        "<!-- api-versions:begin (generated) issue 9 -->",
        "| API (key) | versions |\n|---|---|\n| Produce (0) | 0-11 |",
    ],
)
def test_product_prose_and_code_in_markdown_pass(text: str) -> None:
    assert check_docs.scan_markdown(text) == []


def test_history_in_python_docstrings_and_comments_is_a_finding() -> None:
    source = '''"""A module measured in session 5."""


def f() -> int:
    """Landed in commit 29201e4."""
    # other helpers were running, so the timing is noisy
    return 1
'''
    found = check_docs.scan_python(source)
    assert [(line, rule) for line, rule, _text in found] == [
        (1, "session number"),
        (5, "commit hash"),
        (6, "machine tenants"),
    ]


def test_python_code_string_literals_and_format_constants_pass() -> None:
    source = '''"""Record batch: CRC-32C over attributes..records; magic 2.

    Example header bytes: 00000000 0000003a ffffffff 02c3a1b2f0 (a hex dump is fine).
    """

CRC_SEED = 0xFFFFFFFF  # Castagnoli polynomial 0x82f63b78, reflected
MESSAGE = "session 3 of issue 9"  # a string literal is data, not prose


def stop(grace_s: float) -> None:
    """Stop every node; a node that ignores SIGTERM is killed after ``grace_s``."""
'''
    assert check_docs.scan_python(source) == []


def test_findings_name_the_file_line_and_rule(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "README.md").write_text("# kraftlog\n\nBuilt in wave 2.\n", encoding="utf-8")
    (tmp_path / "docs" / "a.md").write_text("Clean prose.\n", encoding="utf-8")
    (tmp_path / "raft").mkdir()
    (tmp_path / "raft" / "m.py").write_text("x = 1  # see issue 4\n", encoding="utf-8")
    for package in check_docs.PACKAGES:
        (tmp_path / package).mkdir(exist_ok=True)
    found = [str(f) for f in check_docs.history_findings(tmp_path)]
    assert found == [
        "README.md:3: wave number: Built in wave 2.",
        "raft/m.py:1: issue number: see issue 4",
    ]
