from pysyncobj.config import FAIL_REASON as FAIL_REASON
from pysyncobj.config import SyncObjConf as SyncObjConf
from pysyncobj.syncobj import SyncObj as SyncObj
from pysyncobj.syncobj import createJournal as createJournal
from pysyncobj.syncobj import replicated as replicated
