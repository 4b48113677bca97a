"""Shared helpers for metadata unit tests."""

from __future__ import annotations

import sys
from pathlib import Path

# Helper modules live next to the tests (tests/ has no packages).
sys.path.insert(0, str(Path(__file__).parent))
