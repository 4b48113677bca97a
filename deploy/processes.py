"""Node processes of a local cluster: spawn detached, find alive, signal, stop.

A node process is ``python -m deploy.cli start --config <file>`` in its own session (so a
Ctrl-C in the terminal of ``cluster up`` reaches only the supervisor, which then stops the nodes
in order), with stdout and stderr appended to ``node.log`` next to its config and its pid in
``node.pid``. A pid file alone cannot tell a live node from a recycled pid, so liveness also
checks that ``/proc/<pid>/cmdline`` names the node's config file and that the process is not a
zombie.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterable
from pathlib import Path

import deploy

# The repository (or site-packages) directory holding the ``deploy`` package: children import the
# same code as the supervisor even when it runs from a source checkout.
_CODE_ROOT = str(Path(deploy.__file__).resolve().parent.parent)
_POLL_INTERVAL_S = 0.05


def node_command(config_path: str, status_path: str | None = None) -> list[str]:
    cmd = [sys.executable, "-m", "deploy.cli", "start", "--config", config_path]
    if status_path is not None:
        cmd += ["--status-file", status_path]
    return cmd


def spawn_node(
    config_path: str, log_path: str, pid_path: str, status_path: str | None = None
) -> subprocess.Popen[bytes]:
    """Start a node detached from our session; write its pid file; return the handle."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (_CODE_ROOT, env.get("PYTHONPATH", "")) if p)
    # Unbuffered, so node.log shows the last words of a node that dies.
    env["PYTHONUNBUFFERED"] = "1"
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(
            node_command(config_path, status_path),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=os.path.dirname(config_path) or ".",
            env=env,
        )
    tmp = pid_path + ".tmp"
    with open(tmp, "w", encoding="ascii") as f:
        f.write(f"{proc.pid}\n")
    os.replace(tmp, pid_path)
    return proc


def read_pid(pid_path: str) -> int | None:
    try:
        with open(pid_path, encoding="ascii") as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


def is_node_process(pid: int, config_path: str) -> bool:
    """True if ``pid`` is a live (not zombie) node process started with ``config_path``."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = f.read().split(b"\0")
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return False
    # The state field follows the parenthesised command name, which may itself hold spaces.
    state = stat[stat.rfind(b")") + 2 : stat.rfind(b")") + 3]
    if state in (b"Z", b"X"):
        return False
    return os.fsencode(config_path) in argv


def process_state(pid: int) -> str | None:
    """The one-letter state from /proc (R, S, T for stopped, ...), or None if gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    return stat[stat.rfind(b")") + 2 : stat.rfind(b")") + 3].decode("ascii", "replace")


def send_signal(pid: int, sig: int) -> bool:
    """Signal ``pid``; False if it no longer exists."""
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        return False
    return True


def wait_gone(
    targets: Iterable[tuple[int, str]],
    timeout_s: float,
    children: dict[int, subprocess.Popen[bytes]] | None = None,
) -> list[int]:
    """Wait until none of the (pid, config_path) processes is alive; return those still alive.

    Processes in ``children`` are ours and are reaped with ``poll`` so they do not linger as
    zombies.
    """
    pending = dict(targets)
    deadline = time.monotonic() + timeout_s
    while pending:
        for pid in list(pending):
            child = children.get(pid) if children else None
            if child is not None:
                if child.poll() is not None:
                    del pending[pid]
            elif not is_node_process(pid, pending[pid]):
                del pending[pid]
        if not pending or time.monotonic() >= deadline:
            break
        time.sleep(_POLL_INTERVAL_S)
    return list(pending)


def stop_processes(
    targets: list[tuple[int, str]],
    grace_s: float,
    children: dict[int, subprocess.Popen[bytes]] | None = None,
) -> list[int]:
    """SIGTERM every target, wait up to ``grace_s``, SIGKILL the rest; return the pids killed.

    A stopped (SIGSTOPped) process cannot act on SIGTERM, so it gets SIGCONT as well.
    """
    for pid, _ in targets:
        send_signal(pid, signal.SIGTERM)
        send_signal(pid, signal.SIGCONT)
    stubborn = wait_gone(targets, grace_s, children)
    for pid in stubborn:
        send_signal(pid, signal.SIGKILL)
    wait_gone([(p, c) for p, c in targets if p in stubborn], 10.0, children)
    return stubborn
