"""What the benchmark ran on: cores, RAM, kernel, Python, disk; and the load average now."""

from __future__ import annotations

import os
import platform
from pathlib import Path


def load_average() -> list[float]:
    """1, 5 and 15 minute load averages, rounded (other load moves every figure: quote them)."""
    return [round(x, 2) for x in os.getloadavg()]


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _ram_gib() -> float:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    return float("nan")


def _disk(path: str = "/tmp") -> str:
    """The filesystem and device /tmp lives on (the suite's clusters are created there)."""
    best = ("", "", "")
    try:
        for line in Path("/proc/mounts").read_text().splitlines():
            dev, mount, fstype = line.split()[:3]
            if path.startswith(mount) and len(mount) >= len(best[1]):
                best = (dev, mount, fstype)
    except OSError:
        return "unknown"
    dev, mount, fstype = best
    rotational = ""
    name = Path(dev).name.rstrip("0123456789")
    flag = Path(f"/sys/block/{name}/queue/rotational")
    if flag.exists():
        rotational = ", rotational" if flag.read_text().strip() == "1" else ", non-rotational"
    return f"{fstype} on {dev} mounted at {mount}{rotational}"


def describe_machine() -> dict[str, object]:
    return {
        "cores": os.cpu_count(),
        "cpu": _cpu_model(),
        "ram_gib": _ram_gib(),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "disk": _disk(),
    }
