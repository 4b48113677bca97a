"""Error codes of the transactional APIs as each request version names them.

KIP-588 split a fenced producer's error: from AddPartitionsToTxn v2, AddOffsetsToTxn v2,
EndTxn v2 and InitProducerId v4 a producer fenced by a newer epoch gets PRODUCER_FENCED (90);
older versions only know INVALID_PRODUCER_EPOCH (47), which their clients treat the same way.
"""

from __future__ import annotations

from common.error_codes import ErrorCode

# First version of each API that knows PRODUCER_FENCED.
FIRST_PRODUCER_FENCED_VERSION = 2


def for_version(code: int, api_version: int) -> int:
    """``code`` as a client of ``api_version`` of AddPartitionsToTxn, AddOffsetsToTxn or
    EndTxn expects it."""
    if code == ErrorCode.PRODUCER_FENCED and api_version < FIRST_PRODUCER_FENCED_VERSION:
        return int(ErrorCode.INVALID_PRODUCER_EPOCH)
    return int(code)
