"""Check that the documentation describes the product as it is.

    python .ci/check_docs.py        # exit 1 and print file:line: rule: text per finding

Two kinds of check:

- History words. The Markdown pages (README.md, docs/**/*.md) and the docstrings and comments
  of the Python packages (:data:`PACKAGES`) must not speak of how the code came about: no
  session, stop, wave or issue numbers, no ``#N`` issue references, no commit hashes, no notes
  about other tenants of the build machine. String literals and code are not checked, so a
  test vector, a CRC constant or a hex dump in a format's docstring passes; a bare 7-40 digit
  hex word is only a finding in Markdown prose (outside code spans and blocks) or right after
  a word such as ``commit``, ``landed`` or ``since``. History belongs in CHANGELOG.md, which
  is not checked.
- Generated text. docs/configuration.md, the API-version tables of docs/protocol.md and
  docs/broker.md and the client configuration tables of docs/client.md must equal what
  ``python -m deploy.gen_config_docs``, ``python -m deploy.gen_protocol_docs`` and
  ``python -m deploy.gen_client_docs`` would write.

The scanners (:func:`scan_markdown`, :func:`scan_python`) are pure functions of a text, so the
unit tests feed them snippets.
"""

from __future__ import annotations

import ast
import io
import re
import sys
import tokenize
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = (
    "common",
    "raft",
    "metadata",
    "data_plane",
    "kraftlog_client",
    "deploy",
    "chaos",
    "spark_integration",
    "bench",
)

_HEX = r"[0-9a-f]{7,40}"


@dataclass(frozen=True)
class Rule:
    """One forbidden pattern; ``markdown_only`` rules skip docstrings and comments."""

    name: str
    pattern: re.Pattern[str]
    markdown_only: bool = False


RULES: tuple[Rule, ...] = (
    Rule("session number", re.compile(r"\bsessions?\s+#?\d+\b", re.IGNORECASE)),
    Rule("issue number", re.compile(r"\b(?:issues?|PR|pull request)\s+#?\d+\b", re.IGNORECASE)),
    Rule("the issue", re.compile(r"\b(?:the|this|that) issue(?:'s)?\b", re.IGNORECASE)),
    Rule("issue reference #N", re.compile(r"(?<![\w&/#\\])#\d+\b")),
    # "stop" is also a verb ("stop 3 brokers"): a number counts after a preposition or as a title.
    Rule(
        "stop number",
        re.compile(
            r"(?:\b(?:in|of|since|during|before|after|from|the)\s+|^#+\s*)stop\s+#?\d+\b",
            re.IGNORECASE,
        ),
    ),
    Rule("wave number", re.compile(r"\bwaves?\s+#?\d+\b", re.IGNORECASE)),
    Rule(
        "history of this work",
        re.compile(
            r"\b(?:this|last|previous|next|earlier|a later|an earlier)\s+session's\b"
            r"|\b(?:this|last|previous|next)\s+(?:stop|wave)\b",
            re.IGNORECASE,
        ),
    ),
    Rule(
        "commit hash",
        re.compile(
            rf"\b(?:commits?|landed|since|reverted|cherry-picked|fixed in|introduced in)\s+"
            rf"(?:in\s+|at\s+|by\s+)?`?{_HEX}\b",
            re.IGNORECASE,
        ),
    ),
    Rule(
        "machine tenants",
        re.compile(
            r"\btenants?\b|\b(?:other|parallel|concurrent)\s+(?:helpers|agents|sessions"
            r"|engineers)\b|\bhelpers?\s+(?:were|was|are)\s+(?:running|busy)\b"
            r"|\bmachine is shared\b|\bshared (?:machine|host)\b",
            re.IGNORECASE,
        ),
    ),
    Rule(
        "bare commit hash",
        re.compile(rf"(?<![\w.:/-])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d){_HEX}\b"),
        True,
    ),
)

_FENCE = re.compile(r"^\s*(```|~~~)")
_CODE_SPAN = re.compile(r"`[^`]*`")
_LINK_TARGET = re.compile(r"\]\([^)]*\)")


@dataclass(frozen=True)
class Finding:
    """A rule broken at one line of one file."""

    path: str
    line: int
    rule: str
    text: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.rule}: {self.text.strip()}"


def _match(text: str, markdown: bool) -> Iterator[str]:
    for rule in RULES:
        if rule.markdown_only and not markdown:
            continue
        if rule.pattern.search(text):
            yield rule.name


def scan_markdown(text: str) -> list[tuple[int, str, str]]:
    """(line, rule, line text) for every finding in Markdown prose.

    Fenced code blocks, indented code blocks and HTML comments are skipped (commands and
    generator markers, not prose); inside a line, code spans and link targets are blanked before
    the bare-hash rule runs, the other rules see them.
    """
    out: list[tuple[int, str, str]] = []
    in_fence = False
    in_comment = False
    for number, line in enumerate(text.splitlines(), start=1):
        if _FENCE.match(line):
            in_fence = not in_fence
            continue
        if in_fence or line.startswith("    ") or line.startswith("\t"):
            continue
        if in_comment or line.lstrip().startswith("<!--"):
            in_comment = "-->" not in line
            continue
        prose = _LINK_TARGET.sub("]()", line)
        for name in _match(_CODE_SPAN.sub("``", prose), markdown=True):
            out.append((number, name, line))
    return out


def _docstring_lines(tree: ast.AST) -> Iterator[tuple[int, str]]:
    for node in ast.walk(tree):
        if not isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        body = node.body
        if not body or not isinstance(body[0], ast.Expr):
            continue
        value = body[0].value
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            for offset, line in enumerate(value.value.splitlines()):
                yield value.lineno + offset, line


def _comment_lines(source: str) -> Iterator[tuple[int, str]]:
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string.lstrip("#")


def scan_python(source: str) -> list[tuple[int, str, str]]:
    """(line, rule, text) for every finding in the docstrings and comments of ``source``.

    A docstring's line numbers count from its opening quotes, which is exact for the usual
    docstring without escaped line breaks.
    """
    lines: list[tuple[int, str]] = [*_docstring_lines(ast.parse(source)), *_comment_lines(source)]
    out = []
    for number, text in sorted(lines):
        for name in _match(text, markdown=False):
            out.append((number, name, text))
    return out


def markdown_files(root: Path = ROOT) -> list[Path]:
    """README.md and every page under docs/."""
    return [root / "README.md", *sorted((root / "docs").rglob("*.md"))]


def python_files(root: Path = ROOT) -> list[Path]:
    """Every module of :data:`PACKAGES`."""
    return [path for package in PACKAGES for path in sorted((root / package).rglob("*.py"))]


def history_findings(root: Path = ROOT) -> list[Finding]:
    """Every history-word finding in the checked files under ``root``."""
    found: list[Finding] = []
    scans: Iterable[tuple[Path, list[tuple[int, str, str]]]] = [
        *((p, scan_markdown(p.read_text(encoding="utf-8"))) for p in markdown_files(root)),
        *((p, scan_python(p.read_text(encoding="utf-8"))) for p in python_files(root)),
    ]
    for path, results in scans:
        rel = str(path.relative_to(root))
        found.extend(Finding(rel, line, rule, text) for line, rule, text in results)
    return found


def generated_findings() -> list[str]:
    """Generated pages that differ from what their generator would write now."""
    sys.path.insert(0, str(ROOT))
    from deploy import gen_client_docs, gen_config_docs, gen_protocol_docs

    stale = []
    client_text = gen_client_docs.CLIENT_DOC.read_text(encoding="utf-8")
    if client_text != gen_client_docs.render(client_text):
        stale.append(f"{gen_client_docs.CLIENT_DOC.relative_to(ROOT)}: stale generated text")
    if gen_config_docs.DOC_PATH.read_text(encoding="utf-8") != gen_config_docs.render():
        stale.append(f"{gen_config_docs.DOC_PATH.relative_to(ROOT)}: stale generated text")
    for path, text in gen_protocol_docs.rendered().items():
        if path.read_text(encoding="utf-8") != text:
            stale.append(f"{path.relative_to(ROOT)}: stale generated text")
    return stale


def main() -> int:
    problems = [str(f) for f in history_findings()]
    stale = generated_findings()
    for line in problems:
        print(line)
    for line in stale:
        print(f"{line} (run python -m deploy.gen_<config|protocol|client>_docs)")
    if problems:
        print(f"{len(problems)} history finding(s): move history to CHANGELOG.md", file=sys.stderr)
    return 1 if problems or stale else 0


if __name__ == "__main__":
    sys.exit(main())
