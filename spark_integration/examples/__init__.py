"""Example pipelines built on the kraftlog data source (run with ``python -m``)."""
