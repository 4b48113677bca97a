"""Error codes of the transactional APIs as each request version names them.

KIP-588 split a fenced producer's error: from AddPartitionsToTxn v2, AddOffsetsToTxn v2,
EndTxn v2 and InitProducerId v4 a producer fenced by a newer epoch gets PRODUCER_FENCED (90);
older versions only know INVALID_PRODUCER_EPOCH (47), which their clients treat the same way.
"""

from __future__ import annotations

from common.error_codes import ErrorCode

# First version of each API that knows PRODUCER_FENCED.
FIRST_PRODUCER_FENCED_VERSION = 2


# InitProducerId learned PRODUCER_FENCED later, in v4.
INIT_PRODUCER_ID_FIRST_PRODUCER_FENCED_VERSION = 4


def for_version(
    code: int, api_version: int, first_fenced_version: int = FIRST_PRODUCER_FENCED_VERSION
) -> int:
    """``code`` as a client of ``api_version`` of AddPartitionsToTxn, AddOffsetsToTxn or
    EndTxn expects it (InitProducerId: pass its own first version)."""
    if code == ErrorCode.PRODUCER_FENCED and api_version < first_fenced_version:
        return int(ErrorCode.INVALID_PRODUCER_EPOCH)
    return int(code)
