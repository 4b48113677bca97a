"""The private parts of pysyncobj that raft/syncobj_node.py and raft/journal.py reach into,
and the one check that they are all there.

kraftlog extends pysyncobj (pre-vote, keepalives, stale-term replies, bounded frames, durable
acknowledgements, a durable journal, membership kept from the journal) by overriding its hooks
and reading and writing its name-mangled state. Those names are not an API: a new pysyncobj
release may rename any of them, and the failure would show up as an AttributeError deep
inside the tick thread. So the version is pinned exactly in pyproject.toml
(``PINNED_VERSION`` here must match), and :func:`check_pysyncobj_internals` runs when a voter
starts (and in the unit tests): it names every missing attribute and the version kraftlog was
written against.

Thread-safety: pure reads of classes and objects; call from any thread.
"""

from __future__ import annotations

import importlib.metadata
from typing import Any

import pysyncobj.syncobj as pysyncobj_module
from pysyncobj import SyncObj
from pysyncobj.tcp_connection import TcpConnection
from pysyncobj.transport import TCPTransport

from raft.api import MetadataLogError

# The exact pysyncobj release whose private names are listed below (pyproject.toml pins it).
PINNED_VERSION = "0.3.17"

# Methods looked up on the classes (defined by pysyncobj, called or overridden by kraftlog).
CLASS_ATTRIBUTES: dict[type, tuple[str, ...]] = {
    SyncObj: (
        "_onTick",
        "_isLeader",
        "_getLeader",
        "_applyCommand",
        "transferLeadership",
        "_SyncObj__doChangeCluster",
        "_SyncObj__loadDumpFile",
        "_SyncObj__updateClusterConfiguration",
        "_SyncObj__connectedToAnyone",
        "_SyncObj__generateRaftTimeout",
        "_SyncObj__getCurrentLogIndex",
        "_SyncObj__getCurrentLogTerm",
        "_SyncObj__setCurrentTerm",
        "_SyncObj__setState",
    ),
    TcpConnection: ("_TcpConnection__processParseMessage",),
    TCPTransport: ("_onMessageReceived", "_onNewIncomingConnection"),
}
# State that SyncObj.__init__ creates on each instance.
SYNCOBJ_INSTANCE_ATTRIBUTES = (
    "_SyncObj__connectedNodes",
    "_SyncObj__lastResponseTime",
    "_SyncObj__newAppendEntriesTime",
    "_SyncObj__otherNodes",
    "_SyncObj__raftElectionDeadline",
    "_SyncObj__raftLeader",
    "_SyncObj__raftMatchIndex",
    "_SyncObj__raftNextIndex",
    "_SyncObj__raftState",
    "_SyncObj__readonlyNodes",
    "_SyncObj__transferInProgress",
    "_SyncObj__transport",
    "_SyncObj__votedForNodeId",
)
# State that TcpConnection.__init__ creates on each instance.
CONNECTION_INSTANCE_ATTRIBUTES = ("_TcpConnection__readBuffer",)
# Module-level names replaced for the duration of SyncObj.__init__ (the journal factory).
MODULE_ATTRIBUTES = ("createJournal",)


class PysyncobjMismatchError(MetadataLogError):
    """The installed pysyncobj lacks a private name kraftlog relies on."""


def installed_version() -> str:
    try:
        return importlib.metadata.version("pysyncobj")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def missing_internals(sync_obj: Any | None = None, connection: Any | None = None) -> list[str]:
    """``owner.name`` for every private name that is missing: on the classes and the module
    always, on ``sync_obj`` (a SyncObj) and ``connection`` (a TcpConnection) when given."""
    missing = [
        f"pysyncobj.syncobj.{n}" for n in MODULE_ATTRIBUTES if not hasattr(pysyncobj_module, n)
    ]
    for cls, names in CLASS_ATTRIBUTES.items():
        missing += [f"{cls.__name__}.{n}" for n in names if not hasattr(cls, n)]
    if sync_obj is not None:
        missing += [
            f"SyncObj().{n}" for n in SYNCOBJ_INSTANCE_ATTRIBUTES if not hasattr(sync_obj, n)
        ]
    if connection is not None:
        missing += [
            f"TcpConnection().{n}"
            for n in CONNECTION_INSTANCE_ATTRIBUTES
            if not hasattr(connection, n)
        ]
    return missing


def check_pysyncobj_internals(sync_obj: Any | None = None, connection: Any | None = None) -> None:
    """Raise :class:`PysyncobjMismatchError` naming the missing names, the installed version
    and the pinned one, if any private name kraftlog uses is missing."""
    missing = missing_internals(sync_obj, connection)
    if missing:
        raise PysyncobjMismatchError(
            f"pysyncobj {installed_version()} lacks private names kraftlog's raft/ relies on "
            f"({', '.join(missing)}); install pysyncobj=={PINNED_VERSION}, the release "
            "raft/syncobj_node.py was written against"
        )
