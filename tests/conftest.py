"""How the suite is split between pytest-xdist workers (``make test`` runs ``-n 3 --dist
loadgroup``; without ``-n`` nothing here changes what runs or in which order).

A group of tests runs on one worker, in collection order: the test module, or one of
``SHARED_FIXTURE_FOLDERS`` whole, since the modules there share a package- or
session-scoped fixture (one cluster, one Spark session) that would otherwise start once per
worker (``SOLO_MODULES`` excepted). ``GroupScheduling`` finds a test's group from its id
alone, because the scheduler runs in the controller, which collects nothing; it replaces
xdist's own loadgroup scheduler, whose ``xdist_group`` marks no longer reach the controller
under pytest 9.2 (xdist still rewrites the old ``_nodeid`` field). Explicit ``xdist_group``
marks are honoured when they do.

Each worker draws the ports of its clusters from its own slice of the local port range
(``KRAFTLOG_PORT_SLICE``, deploy/ports.py), which its node processes and ``kraftlog``
commands inherit: two workers never pick one port, and a port a worker's stopped node will
bind again on restart is never handed to a sibling's new cluster meanwhile.

Workers sort their collection so that groups are queued costliest first (``_GROUP_ORDER``):
a long group that started last would leave the other workers idle at the end, while the many
short unit-test modules at the back fill the gaps.
"""

from __future__ import annotations

import os

import pytest

from deploy.ports import PORT_SLICE_ENV

try:
    from xdist.scheduler import LoadGroupScheduling
except ImportError:  # xdist is a dev dependency; a run without it is a plain serial run
    LoadGroupScheduling = None

# Folders whose modules share a package- or session-scoped fixture of the folder's conftest.
SHARED_FIXTURE_FOLDERS = (
    "tests/spark",
    "tests/integration/client_groups",
    "tests/integration/retention",
)
# Modules of those folders that are a group of their own all the same: each runs for minutes,
# longer than the shared fixture it starts a second time on its worker (the exactly-once kill
# test drives its own Spark driver processes and needs only the folder's 3-broker cluster).
SOLO_MODULES = frozenset({"tests/spark/test_exactly_once_kill.py"})

# Groups are queued by the first of these prefixes their id starts with, collection order
# kept within one class. The exactly-once kill test is the longest single test; the other
# Spark tests make the longest group; integration, chaos and compat tests start real node
# processes; unit tests (everything else) are short modules that balance the workers' tails.
_GROUP_ORDER = (
    "tests/spark/test_exactly_once_kill.py",
    "tests/spark",
    "tests/integration",
    "tests/chaos",
    "tests/compat",
)
_SHARED_SCOPES = frozenset({"package", "session"})


def group_of(nodeid: str) -> str:
    """The group of the test ``nodeid``: its shared-fixture folder or its module."""
    path = nodeid.split("::", 1)[0]
    if path in SOLO_MODULES:
        return path
    for folder in SHARED_FIXTURE_FOLDERS:
        if path.startswith(folder + "/"):
            return folder
    return path


def _rank(group: str) -> int:
    for rank, prefix in enumerate(_GROUP_ORDER):
        if group == prefix or group.startswith(prefix + "/"):
            return rank
    return len(_GROUP_ORDER)


def _shared_fixture_dirs(item: pytest.Item) -> set[str]:
    """Ids of the conftest folders whose package- or session-scoped fixtures ``item`` uses
    (fixtures of plugins, such as ``tmp_path_factory``, have no folder)."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return set()
    return {
        fixturedef.baseid
        for fixturedefs in info.name2fixturedefs.values()
        for fixturedef in fixturedefs
        if fixturedef.scope in _SHARED_SCOPES and fixturedef.baseid
    }


def _check_shared_folders(items: list[pytest.Item]) -> None:
    """Raise if a test shares a fixture across modules from a folder that is not one of
    ``SHARED_FIXTURE_FOLDERS``: its modules would each start that fixture on their worker."""
    for item in items:
        group = group_of(item.nodeid)
        if group in SOLO_MODULES:
            continue
        for folder in _shared_fixture_dirs(item):
            if not (group == folder or group.startswith(folder + "/")):
                raise pytest.UsageError(
                    f"{item.nodeid} uses a package- or session-scoped fixture of "
                    f"{folder}/conftest.py: add {folder!r} to SHARED_FIXTURE_FOLDERS in "
                    "tests/conftest.py so that its modules run on one xdist worker"
                )


def _distributed(config: pytest.Config) -> bool:
    # A worker has ``workerinput``; the controller has ``numprocesses``.
    return hasattr(config, "workerinput") or bool(getattr(config.option, "numprocesses", None))


def pytest_configure(config: pytest.Config) -> None:
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None:
        index = int(str(workerinput["workerid"]).removeprefix("gw"))
        os.environ[PORT_SLICE_ENV] = f"{index}/{workerinput['workercount']}"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not _distributed(config):
        return
    _check_shared_folders(items)
    # Every worker sorts alike (xdist checks that all collected the same ids in the same
    # order); the sort is stable, so tests keep their order inside a group.
    items.sort(key=lambda item: _rank(group_of(item.nodeid)))


if LoadGroupScheduling is not None:

    class GroupScheduling(LoadGroupScheduling):
        """xdist's loadgroup scheduler with ``group_of`` as the default group of a test."""

        def _split_scope(self, nodeid: str) -> str:
            if nodeid.rfind("@") > nodeid.rfind("]"):
                return super()._split_scope(nodeid)
            return group_of(nodeid)

    # tryfirst: xdist's own implementation of this firstresult hook would answer otherwise.
    @pytest.hookimpl(optionalhook=True, tryfirst=True)
    def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
        if config.getvalue("dist") != "loadgroup":
            return None
        return GroupScheduling(config, log)
