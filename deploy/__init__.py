"""The kraftlog command line, node processes, the local cluster and deployment files."""

__version__ = "0.1.0"
