"""Filesystems that fail on demand, for log-directory failure tests and benchmarks (root only):
a loop-mounted ext4 that the kernel turns read-only on request (``errors=remount-ro`` and
``/sys/fs/ext4/<dev>/trigger_fs_error``: every later write fails with EROFS, as after a disk
error), and two tmpfs of the same free space, one to fill to ENOSPC and one that stays
healthy. Equal free space lets a broker spread its logs over the three
(data_plane/storage/log_dir_placement.py).

Everything made is undone by :meth:`FailingDisks.close` (lazy unmounts, loop device
detached). Not thread-safe.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from data_plane.storage.errors import LogDirLayoutError
from data_plane.storage.log_loader import parse_topic_partition
from deploy.local_cluster import LocalCluster
from deploy.meta_properties import format_directories

# Size of the ext4 image; the tmpfs get the ext4's free space.
DEFAULT_EXT4_IMAGE_BYTES = 48 * 1024 * 1024
COMMAND_TIMEOUT_S = 60
FSCK_TIMEOUT_S = 120


def _run(*argv: str) -> None:
    subprocess.run(argv, check=True, capture_output=True, timeout=COMMAND_TIMEOUT_S)


def unavailable_reason() -> str | None:
    """Why failing disks cannot be made here (None: they can)."""
    if os.geteuid() != 0:
        return "needs root (mount, losetup)"
    for tool in ("mount", "umount", "losetup", "mkfs.ext4", "e2fsck"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed"
    return None


class FailingDisks:
    """A loop-mounted ext4 and two tmpfs of the same free space under ``base``; raises
    ``subprocess.CalledProcessError`` when a tool refuses (no loop devices, no tmpfs)."""

    def __init__(self, base: Path, image_bytes: int = DEFAULT_EXT4_IMAGE_BYTES) -> None:
        self.base = base
        self.image_bytes = image_bytes
        self.image = base / "ext4.img"
        self.ext4 = base / "ext4"
        self.full = base / "full"
        self.healthy = base / "healthy"
        self.loop: str | None = None
        self.mounted: list[Path] = []
        for d in (self.ext4, self.full, self.healthy):
            d.mkdir(parents=True)
        with open(self.image, "wb") as f:
            f.truncate(self.image_bytes)
        _run("mkfs.ext4", "-q", "-F", str(self.image))
        self.loop = subprocess.run(
            ["losetup", "-f", "--show", str(self.image)],
            check=True, capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S,
        ).stdout.strip()  # fmt: skip
        _run("blockdev", "--setrw", self.loop)
        self._mount_ext4()
        st = os.statvfs(self.ext4)
        free_kib = st.f_bavail * st.f_frsize // 1024
        for d in (self.full, self.healthy):
            _run("mount", "-t", "tmpfs", "-o", f"size={free_kib}k", "tmpfs", str(d))
            self.mounted.append(d)

    def _mount_ext4(self) -> None:
        assert self.loop is not None
        _run("mount", "-o", "errors=remount-ro", self.loop, str(self.ext4))
        self.mounted.append(self.ext4)

    def log_dirs(self) -> list[Path]:
        """The three log directories: on the tmpfs to fill, the ext4, the healthy tmpfs."""
        return [self.full / "data", self.ext4 / "data", self.healthy / "data"]

    def use_for(self, cluster: LocalCluster, node_id: int) -> None:
        """Make the three directories the (formatted) log directories of broker ``node_id``,
        before it starts."""
        dirs = [str(d) for d in self.log_dirs()]
        cluster.update_config(node_id, {"log.dirs": ",".join(dirs)})
        format_directories(dirs, cluster_id=cluster.cluster_id, node_id=node_id)

    def replica_dirs(self) -> dict[tuple[str, int], Path]:
        """(topic, partition) -> which of the three directories holds its log."""
        out = {}
        for d in self.log_dirs():
            for entry in d.iterdir():
                if not entry.is_dir():
                    continue
                try:
                    out[parse_topic_partition(entry.name)] = d
                except LogDirLayoutError:
                    continue  # a directory being deleted, not a log
        return out

    def fill(self) -> None:
        """Fill the ``full`` tmpfs until the kernel answers ENOSPC."""
        chunk = b"\0" * (1 << 20)
        with open(self.full / "filler", "wb") as f:
            for _ in range(self.image_bytes // len(chunk) + 8):  # bounded: the tmpfs is smaller
                try:
                    f.write(chunk)
                    f.flush()
                except OSError:
                    return
        raise OSError(f"{self.full} never filled up")

    def break_ext4(self) -> None:
        """An ext4 error: errors=remount-ro makes every later write fail with EROFS."""
        assert self.loop is not None
        name = os.path.basename(self.loop)
        Path(f"/sys/fs/ext4/{name}/trigger_fs_error").write_text("kraftlog failing disk\n")

    def repair(self) -> None:
        """Free the tmpfs, and check and remount the ext4 (the broker must be stopped)."""
        (self.full / "filler").unlink()
        _run("umount", str(self.ext4))
        self.mounted.remove(self.ext4)
        assert self.loop is not None
        subprocess.run(["e2fsck", "-fy", self.loop], capture_output=True, timeout=FSCK_TIMEOUT_S)
        self._mount_ext4()

    def close(self) -> None:
        """Unmount everything (lazily: a process may still hold files) and free the loop."""
        for d in reversed(self.mounted):
            subprocess.run(["umount", "-l", str(d)], capture_output=True, timeout=COMMAND_TIMEOUT_S)
        self.mounted.clear()
        if self.loop is not None:
            subprocess.run(
                ["losetup", "-d", self.loop], capture_output=True, timeout=COMMAND_TIMEOUT_S
            )
            self.loop = None
