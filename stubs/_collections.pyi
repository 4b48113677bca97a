# CPython's private module behind collections; typeshed has no stub for it. kraftlog_client's
# tuple-based records use its field descriptor (with a property fallback elsewhere).
from typing import Any

def _tuplegetter(index: int, doc: str) -> Any: ...
