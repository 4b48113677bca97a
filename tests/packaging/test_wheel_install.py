"""The release artifacts work on their own: ``python -m build`` makes an sdist and, from that
sdist, a wheel; the wheel holds every module and data file of the product and nothing else; and
installed into a fresh virtual environment it runs a cluster from a directory outside the
checkout, through the installed ``kraftlog`` command alone.

The build runs on a copy of the checkout's files (git's tracked and untracked-but-not-ignored
ones), so nothing is written into the checkout. The fresh environment is made without pip and
gets the wheel with ``pip --python``; the third-party dependencies come from the site-packages
of the interpreter running the tests, added by a ``.pth`` line, the way ``--system-site-packages``
adds a base interpreter's. A directory named in a ``.pth`` file is only appended to
``sys.path``: its own ``.pth`` files do not run, so the checkout's editable install stays
inactive and the product can only be imported from the wheel (the test checks where it is
imported from).
"""

from __future__ import annotations

import os
import shutil
import site
import subprocess
import sys
import sysconfig
import zipfile
from collections.abc import Sequence
from pathlib import Path

import pytest

from common.version import KRAFTLOG_VERSION

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
# The product: the top-level packages and modules a wheel carries (pyproject.toml's
# [tool.setuptools] py-modules and packages.find).
PRODUCT_PACKAGES = (
    "chaos",
    "common",
    "data_plane",
    "deploy",
    "kraftlog_client",
    "metadata",
    "raft",
    "spark_integration",
)
PRODUCT_MODULES = ("pyspark_kraftlog.py",)
# Files read beside the code, which setuptools ships only when package-data names them.
DATA_FILES = (
    "deploy/grafana/kraftlog.json",
    "deploy/systemd/kraftlog@.service",
    "deploy/examples/combined.properties",
    "deploy/examples/broker-1.properties",
    "deploy/examples/controller-1.properties",
)
BUILD_TIMEOUT_S = 300.0
COMMAND_TIMEOUT_S = 180.0
TOPIC = "release-check"
RECORD = "installed from the wheel"


def _run(
    argv: Sequence[str | Path],
    *,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    stdin: str | None = None,
    timeout_s: float = COMMAND_TIMEOUT_S,
) -> str:
    """Run ``argv``; its stdout. A non-zero exit fails the test with both outputs."""
    done = subprocess.run(
        [str(a) for a in argv],
        cwd=cwd,
        env=env,
        input=stdin if stdin is not None else "",
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )
    if done.returncode != 0:
        pytest.fail(
            f"{argv} exited {done.returncode}\nstdout:\n{done.stdout[-4000:]}\n"
            f"stderr:\n{done.stderr[-4000:]}"
        )
    return done.stdout


def _source_files() -> list[str]:
    """The checkout's files as a commit of it would hold them, new files included."""
    out = _run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=REPO,
    )
    return [p for p in out.split("\0") if p and (REPO / p).is_file()]


def _copy_source(dest: Path) -> list[str]:
    """Copy the checkout's files to ``dest``; their relative paths."""
    files = _source_files()
    for rel in files:
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / rel, target)
    return files


def _is_product(rel: str) -> bool:
    top = rel.split("/", 1)[0]
    return (top in PRODUCT_PACKAGES and "/" in rel) or rel in PRODUCT_MODULES


def _clean_env(venv: Path) -> dict[str, str]:
    """The environment of a user with only the fresh venv's ``bin`` first on PATH."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP")
    }
    env["PATH"] = os.pathsep.join([str(venv / "bin"), env.get("PATH", "")])
    env["VIRTUAL_ENV"] = str(venv)
    return env


def _venv_site_packages(venv: Path) -> Path:
    return Path(
        sysconfig.get_path(
            "purelib", scheme="venv", vars={"base": str(venv), "platbase": str(venv)}
        )
    )


@pytest.fixture
def work_dir(tmp_path: Path) -> Path:
    """A directory outside the checkout: every installed command runs there."""
    if tmp_path.resolve().is_relative_to(REPO):
        pytest.fail(f"the temporary directory {tmp_path} lies inside the checkout {REPO}")
    work = tmp_path / "work"
    work.mkdir()
    return work


def test_the_wheel_runs_a_cluster_outside_the_checkout(tmp_path: Path, work_dir: Path) -> None:
    src = tmp_path / "src"
    source_files = _copy_source(src)
    dist = tmp_path / "dist"
    # sdist first, then the wheel from the unpacked sdist (build's default): the sdist must
    # carry everything the wheel needs.
    _run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", dist, src],
        timeout_s=BUILD_TIMEOUT_S,
    )
    sdist = dist / f"kraftlog-{KRAFTLOG_VERSION}.tar.gz"
    wheel = dist / f"kraftlog-{KRAFTLOG_VERSION}-py3-none-any.whl"
    assert sdist.is_file(), sorted(p.name for p in dist.iterdir())
    assert wheel.is_file(), sorted(p.name for p in dist.iterdir())

    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        metadata = zf.read(f"kraftlog-{KRAFTLOG_VERSION}.dist-info/METADATA").decode()
    assert f"\nVersion: {KRAFTLOG_VERSION}\n" in metadata
    shipped = {n for n in names if ".dist-info/" not in n}
    expected = {rel for rel in source_files if _is_product(rel)}
    assert set(DATA_FILES) <= expected
    assert expected - shipped == set(), "product files missing from the wheel"
    assert shipped - expected == set(), "files in the wheel that are not the product's"

    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", venv])
    python = venv / "bin" / "python"
    site_packages = _venv_site_packages(venv)
    assert site_packages.is_dir(), site_packages
    (site_packages / "kraftlog_test_dependencies.pth").write_text(
        "".join(f"{p}\n" for p in site.getsitepackages()), encoding="utf-8"
    )
    pip = [sys.executable, "-m", "pip", "--python", python]
    # --ignore-installed: the .pth above also shows pip the checkout's own (editable) kraftlog
    # of the same version, which pip would otherwise take as installed already.
    install = ["install", "--quiet", "--no-deps", "--no-index", "--no-compile"]
    _run([*pip, *install, "--ignore-installed", wheel])

    env = _clean_env(venv)

    def kraftlog(*args: str | Path, stdin: str | None = None) -> str:
        """The installed command, run from the work directory; its stdout."""
        return _run([venv / "bin" / "kraftlog", *args], cwd=work_dir, env=env, stdin=stdin)

    assert kraftlog("--version").strip() == f"kraftlog {KRAFTLOG_VERSION}"
    where = _run(
        [
            python,
            "-c",
            "import sys, importlib.metadata, common, deploy, pyspark_kraftlog; "
            "print(common.__file__); print(deploy.__file__); print(pyspark_kraftlog.__file__); "
            "print(importlib.metadata.version('kraftlog')); print(*sys.path, sep='\\n')",
        ],
        cwd=work_dir,
        env=env,
    ).splitlines()
    for module_file in where[:3]:
        assert Path(module_file).is_relative_to(site_packages), where
    assert where[3] == KRAFTLOG_VERSION
    assert not any(Path(p).resolve() == REPO for p in where[4:] if p), where

    cluster = work_dir / "cluster"
    at = ("--dir", str(cluster))
    try:
        kraftlog(
            "cluster", "up", *at, "--controllers", "1", "--brokers", "1", "--detach", "--monitoring"
        )
        dashboard = cluster / "monitoring" / "grafana" / "dashboards" / "kraftlog.json"
        assert dashboard.read_bytes() == (REPO / "deploy/grafana/kraftlog.json").read_bytes()
        kraftlog("topics", "create", TOPIC, "--partitions", "1", "--replication-factor", "1", *at)
        kraftlog("produce", "--topic", TOPIC, *at, stdin=RECORD + "\n")
        consumed = kraftlog(
            "consume", "--topic", TOPIC, "--from-beginning", "--max-messages", "1", *at
        )
        assert consumed.splitlines() == [RECORD]
        kraftlog("cluster", "down", *at)
    finally:
        # Whatever failed above, no node outlives the test (a no-op after a clean stop).
        if cluster.exists():
            subprocess.run(
                [str(venv / "bin" / "kraftlog"), "cluster", "down", *at],
                cwd=work_dir,
                env=env,
                capture_output=True,
                timeout=COMMAND_TIMEOUT_S,
                check=False,
            )
