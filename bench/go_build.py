"""Building the bench's Go programs offline, in GOPATH mode, from Debian's Go packages.

Each program is one ``main.go`` in a directory under bench/; its binary goes to
``bench/.build/<hash of main.go and the Go version>/<name>``, so an edit or a new Go
rebuilds it and an unchanged one is reused. ``make bench`` installs the packages as root.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

BUILD_ROOT = Path(__file__).resolve().parent / ".build"
GOCODE = "/usr/share/gocode"
BUILD_TIMEOUT_S = 300.0


def go_binary(source_dir: Path, name: str, needs: str) -> Path | None:
    """``source_dir``'s program built as ``name``; None when Go or the package ``needs``
    (an import path under GOCODE, as ``github.com/Shopify/sarama``) is not installed."""
    if shutil.which("go") is None or not (Path(GOCODE) / "src" / needs).is_dir():
        return None
    source = (source_dir / "main.go").read_bytes()
    version = subprocess.run(
        ["go", "version"], capture_output=True, text=True, timeout=30, check=True
    ).stdout
    out = BUILD_ROOT / hashlib.sha256(source + version.encode()).hexdigest()[:16] / name
    if out.exists():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "GO111MODULE": "off",
        "GOPATH": f"{GOCODE}:{BUILD_ROOT / 'gopath'}",
        "GOCACHE": str(BUILD_ROOT / "gocache"),
        "GOFLAGS": "",
    }
    partial = out.with_suffix(f".{os.getpid()}.tmp")
    done = subprocess.run(
        ["go", "build", "-o", str(partial), "."],
        cwd=source_dir,
        env=env,
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT_S,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"go build failed:\n{done.stdout}\n{done.stderr}")
    partial.replace(out)
    return out
