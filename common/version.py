"""kraftlog's version, defined here and nowhere else.

Semantic versioning (``MAJOR.MINOR.PATCH``, from 0.x). setuptools reads this constant as the
package version (``dynamic = ["version"]`` in pyproject.toml, without importing the package),
``kraftlog --version`` prints it, and clients name it in ApiVersions v3+
(client_software_version). A release is the commit that changes it, tagged ``vX.Y.Z``
(CHANGELOG.md). It must stay a plain string literal: setuptools reads it statically.
"""

from __future__ import annotations

KRAFTLOG_VERSION = "0.2.0"
