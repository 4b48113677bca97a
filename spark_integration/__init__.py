"""The PySpark data source for kraftlog topics."""
