"""The defaults in docs/spark.md's option tables are the ones in spark_integration's code."""

from __future__ import annotations

import re
from pathlib import Path

from common.configdef import describe
from spark_integration import options
from spark_integration.cluster import DEFAULT_PARTITION_FETCH_BYTES

_DOC = Path(__file__).resolve().parents[3] / "docs" / "spark.md"


def _rows() -> dict[str, list[str]]:
    """First-column key (the first backticked name) -> the row's cells."""
    rows: dict[str, list[str]] = {}
    for line in _DOC.read_text(encoding="utf-8").splitlines():
        if not line.startswith("| `"):
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        key = re.match(r"`([^`]+)`", cells[0])
        if key is not None:
            rows.setdefault(key.group(1), cells)
    return rows


def test_read_option_defaults_match_the_option_declarations() -> None:
    rows = _rows()
    declared = describe(options._ScalarReadOptions)
    assert declared
    for key, default, _doc in declared:
        assert key in rows, key
        shown = rows[key][1].strip("`")
        assert shown == (default if default != "" else "none"), (key, shown, default)


def test_write_option_defaults_match_the_code() -> None:
    rows = _rows()
    assert rows["exactlyOnce.commitLog"][1] == f"`{options.DEFAULT_COMMIT_LOG}`"
    assert rows["transactionalIdPrefix"][1] == f"`{options.TRANSACTIONAL_ID_PREFIX_DEFAULT}<topic>`"
    timeout = rows["kafka.transaction.timeout.ms"][1]
    assert timeout.split()[0] == str(options.DEFAULT_TRANSACTION_TIMEOUT_MS)


def test_the_partition_fetch_size_the_source_sets_is_the_one_named() -> None:
    row = " | ".join(_rows()["kafka.<consumer property>"])
    mib = re.search(r"`kafka.max.partition.fetch.bytes` \(default (\d+) MiB here\)", row)
    assert mib is not None
    assert int(mib.group(1)) * 1024 * 1024 == DEFAULT_PARTITION_FETCH_BYTES
