"""The kraftlog command line, node processes, the local cluster and deployment files."""

from common.version import KRAFTLOG_VERSION

__version__ = KRAFTLOG_VERSION
