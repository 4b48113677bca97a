from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from deploy.cli import main

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[3]


def kraftlog_produce(*args: str, stdin: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "deploy.cli", "produce", *args],
        input=stdin,
        text=True,
        capture_output=True,
        timeout=120,
        cwd=REPO,
        check=False,
    )


def test_produce_lines_with_keys_and_headers_then_consume_formats(
    bootstrap: str, new_topic: Callable[..., str], capsys: pytest.CaptureFixture[str]
) -> None:
    topic = new_topic(partitions=2)
    lines = "".join(f"trace:t{i},empty\tk{i}:value {i}\n" for i in range(20))
    done = kraftlog_produce(
        "--bootstrap-server",
        bootstrap,
        "--topic",
        topic,
        "--key-separator",
        ":",
        "--parse-headers",
        "--compression-type",
        "gzip",
        stdin=lines,
    )
    assert done.returncode == 0, done.stderr

    code = main(
        [
            "consume",
            "--bootstrap-server",
            bootstrap,
            "--topic",
            topic,
            "--from-beginning",
            "--max-messages",
            "20",
            "--format",
            "json",
        ]
    )
    out, err = capsys.readouterr()
    assert code == 0 and "Processed a total of 20 messages" in err
    rows = [json.loads(line) for line in out.splitlines()]
    assert sorted(r["value"] for r in rows) == sorted(f"value {i}" for i in range(20))
    by_key = {r["key"]: r for r in rows}
    assert by_key["k3"]["headers"] == [
        {"key": "trace", "value": "t3"},
        {"key": "empty", "value": None},
    ]

    partition = by_key["k3"]["partition"]
    code = main(
        [
            "consume",
            "--bootstrap-server",
            bootstrap,
            "--topic",
            topic,
            "--partition",
            str(partition),
            "--offset",
            "1",
            "--timeout-ms",
            "1500",
            "--print-key",
            "--print-offset",
        ]
    )
    out, _err = capsys.readouterr()
    printed = out.splitlines()
    in_partition = sorted(
        (r["offset"], r["key"], r["value"]) for r in rows if r["partition"] == partition
    )
    assert code == 0
    assert printed == [f"Offset:{o}\t{k}\t{v}" for o, k, v in in_partition[1:]]


def test_produce_rejects_a_line_without_the_key_separator(
    bootstrap: str, new_topic: Callable[..., str]
) -> None:
    topic = new_topic()
    done = kraftlog_produce(
        "--bootstrap-server",
        bootstrap,
        "--topic",
        topic,
        "--key-separator",
        ":",
        stdin="no separator here\n",
    )
    assert done.returncode == 1 and "key separator" in done.stderr


def test_consume_kv_format_and_offset_needs_partition(
    bootstrap: str, new_topic: Callable[..., str], capsys: pytest.CaptureFixture[str]
) -> None:
    topic = new_topic()
    done = kraftlog_produce(
        "--bootstrap-server", bootstrap, "--topic", topic, "--header", "src=cli", stdin="a\nb\n"
    )
    assert done.returncode == 0, done.stderr
    code = main(
        [
            "consume",
            "--bootstrap-server",
            bootstrap,
            "--topic",
            topic,
            "--from-beginning",
            "--max-messages",
            "2",
            "--format",
            "kv",
            "--key-separator",
            "=",
        ]
    )
    out, _ = capsys.readouterr()
    assert code == 0 and out.splitlines() == ["null=a", "null=b"]
    code = main(["consume", "--bootstrap-server", bootstrap, "--topic", topic, "--offset", "0"])
    _, err = capsys.readouterr()
    assert code == 1 and "--offset needs --partition" in err
