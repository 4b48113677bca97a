"""kraftlog's version: the same as ``[project].version`` in pyproject.toml (a test checks
them against each other). Clients name it in ApiVersions v3+ (client_software_version); the
command line prints it."""

from __future__ import annotations

KRAFTLOG_VERSION = "0.1.0"
