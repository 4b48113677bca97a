"""Test helper: a quorum of voter_proc.py processes on 127.0.0.1 (not a test module)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from deploy.ports import free_ports

VOTER_SCRIPT = Path(__file__).with_name("voter_proc.py")
REPO_ROOT = Path(__file__).resolve().parents[3]
START_TIMEOUT_S = 20.0
REQUEST_TIMEOUT_S = 10.0


class VoterProcess:
    def __init__(self, node_id: int, args: list[str], log_path: Path) -> None:
        self.node_id = node_id
        self.args = args
        self.log_path = log_path
        self.proc: subprocess.Popen[bytes] | None = None
        self.control_port = 0

    def start(self) -> None:
        self._close_pipe()
        env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
        with open(self.log_path, "ab") as err:
            self.proc = subprocess.Popen(
                [sys.executable, str(VOTER_SCRIPT), *self.args],
                stdout=subprocess.PIPE,
                stderr=err,
                env=env,
            )
        assert self.proc.stdout is not None
        deadline = time.monotonic() + START_TIMEOUT_S
        line = b""
        while time.monotonic() < deadline and self.proc.poll() is None:
            line = self.proc.stdout.readline()
            if line.startswith(b"READY "):
                self.control_port = int(line.split()[1])
                return
        raise RuntimeError(f"voter {self.node_id} did not start: {line!r}, see {self.log_path}")

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def signal(self, sig: int) -> None:
        if self.running:
            assert self.proc is not None
            self.proc.send_signal(sig)

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.kill()
            self.proc.wait(10)
        self._close_pipe()

    def stop(self) -> None:
        """SIGTERM: the voter closes its log cleanly."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self._close_pipe()

    def _close_pipe(self) -> None:
        if self.proc is not None and self.proc.stdout is not None:
            self.proc.stdout.close()

    def request(
        self, op: str, *, io_timeout_s: float = REQUEST_TIMEOUT_S, **fields: Any
    ) -> dict[str, Any]:
        """One request to the voter's control socket; OSError if it does not answer in time."""
        address = ("127.0.0.1", self.control_port)
        with socket.create_connection(address, timeout=io_timeout_s) as s:
            s.sendall(json.dumps({"op": op, **fields}).encode() + b"\n")
            data = b""
            while not data.endswith(b"\n"):
                chunk = s.recv(1 << 20)
                if not chunk:
                    break
                data += chunk
        if not data:
            raise ConnectionError(f"voter {self.node_id} closed the control connection")
        return json.loads(data)

    def read_all(self) -> dict[int, tuple[str, bool]]:
        """Every committed entry the voter holds, snapshot included: offset -> (hex, control)."""
        out: dict[int, tuple[str, bool]] = {}
        snap = self.request("snapshot")
        start = 0
        if snap["snapshot"] is not None:
            for offset, _epoch, record, is_control in snap["entries"]:
                out[offset] = (record, is_control)
            start = snap["snapshot"][0] + 1
        for _ in range(100_000):
            r = self.request("read", **{"from": start, "max": 1000})
            if not r["ok"] or not r["entries"]:
                break
            for offset, _epoch, record, is_control in r["entries"]:
                out[offset] = (record, is_control)
            start = r["entries"][-1][0] + 1
        return out


class RaftCluster:
    def __init__(
        self,
        base_dir: Path,
        size: int = 3,
        *,
        secret: str = "test-secret",
        election_ms: int = 500,
        append_ms: int = 50,
        max_tail_records: int = 10000,
    ) -> None:
        self.election_ms = election_ms
        self.base_dir = base_dir
        base_dir.mkdir(parents=True, exist_ok=True)
        ports = free_ports(size)
        self.voters_spec = ",".join(f"{i + 1}@127.0.0.1:{p}" for i, p in enumerate(ports))
        self.raft_ports = {i + 1: p for i, p in enumerate(ports)}
        self.voters: dict[int, VoterProcess] = {}
        self._common_args = [
            "--secret", secret, "--election-ms", str(election_ms), "--append-ms", str(append_ms),
            "--max-tail-records", str(max_tail_records),
        ]  # fmt: skip
        for i in range(1, size + 1):
            args = [
                "--node-id", str(i), "--voters", self.voters_spec,
                "--dir", str(base_dir / f"voter{i}"), *self._common_args,
            ]  # fmt: skip
            self.voters[i] = VoterProcess(i, args, base_dir / f"voter{i}.stderr")

    def add_process(self, node_id: int, voters_spec: str | None = None) -> VoterProcess:
        """Start a new node ``node_id`` on a free Raft port that is not in the voter set: it
        follows the quorum (``voters_spec``, default the initial voters) as an observer."""
        (port,) = free_ports(1)
        self.raft_ports[node_id] = port
        args = [
            "--node-id", str(node_id), "--voters", voters_spec or self.voters_spec,
            "--raft-address", f"127.0.0.1:{port}",
            "--dir", str(self.base_dir / f"voter{node_id}"), *self._common_args,
        ]  # fmt: skip
        proc = VoterProcess(node_id, args, self.base_dir / f"voter{node_id}.stderr")
        self.voters[node_id] = proc
        proc.start()
        return proc

    def leader_request(
        self,
        op: str,
        *,
        timeout_s: float = 30.0,
        retry_reasons: tuple[str, ...] = (),
        **fields: Any,
    ) -> dict[str, Any]:
        """``op`` on the current leader, retried (until ``timeout_s``) when the leader moved
        or the answer is a membership refusal whose reason is in ``retry_reasons``; returns
        the last answer."""
        deadline = time.monotonic() + timeout_s
        answer: dict[str, Any] = {}
        while time.monotonic() < deadline:
            try:
                leader = self.wait_for_leader(max(1.0, deadline - time.monotonic()))
                answer = self.voters[leader].request(op, **fields)
            except (OSError, TimeoutError) as e:
                answer = {"ok": False, "error": type(e).__name__, "message": str(e)}
                continue
            if answer["ok"]:
                return answer
            if answer["error"] != "NotLeaderError" and answer.get("reason") not in retry_reasons:
                return answer
            time.sleep(0.2)
        return answer

    def start(self) -> None:
        for v in self.voters.values():
            v.start()

    def close(self) -> None:
        for v in self.voters.values():
            v.kill()

    def wait_for_leader(self, timeout_s: float = 20.0, among: list[int] | None = None) -> int:
        """Id of a voter whose leader-change record has committed (is_leader)."""
        deadline = time.monotonic() + timeout_s
        ids = among if among is not None else list(self.voters)
        while time.monotonic() < deadline:
            for i in ids:
                v = self.voters[i]
                if not v.running:
                    continue
                try:
                    if v.request("info", io_timeout_s=2.0)["is_leader"]:
                        return i
                except OSError:
                    continue
            time.sleep(0.05)
        raise TimeoutError(f"no leader among {ids} within {timeout_s} s")
