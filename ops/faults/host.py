"""What some faults need of the machine: a process whose clock is skewed, a small
filesystem of the run's own that can be filled up, and processes that can be cut off
the network."""

from __future__ import annotations

import errno
import os
import subprocess
import time
from pathlib import Path

from jobstream._pipeline.errors import ConfigurationError
from jobstream._pipeline.package_data import package_path

SKEWED_CLOCK_PATH = package_path("jobstream._ops.faults", "skewed_clock")
"""A folder whose sitecustomize.py moves the wall clock of the process that imports it."""
CLOCK_OFFSET_ENV = "JOBSTREAM_FAULTS_CLOCK_OFFSET_MS"

FILLER = ".filler"
FILL_CHUNK = 1 << 20


def skewed_clock_env(offset_ms: int) -> tuple[tuple[str, str], ...]:
    """The environment that runs a Python process with its wall clock ``offset_ms`` off.

    Python's clock only: libfaketime would move the Kafka client's clock too, but
    librdkafka's timed waits break under it (a clock behind ends them at once, one ahead
    stretches them past the group session), which a skewed host never does."""
    path = os.pathsep.join(filter(None, (str(SKEWED_CLOCK_PATH), os.environ.get("PYTHONPATH"))))
    return (("PYTHONPATH", path), (CLOCK_OFFSET_ENV, str(offset_ms)))


def mount_small_disk(folder: Path, size_mb: int) -> None:
    """A tmpfs of ``size_mb`` at ``folder`` (needs root, as .ci/run has)."""
    folder.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_mb}m", "tmpfs",
                           str(folder)], capture_output=True, text=True, timeout=30)  # fmt: skip
    if done.returncode != 0:
        raise ConfigurationError(f"cannot mount a {size_mb} MB tmpfs at {folder} for the "
                                 f"full-disk fault: {done.stderr.strip()}")  # fmt: skip


def unmount(folder: Path) -> None:
    subprocess.run(["umount", "--lazy", str(folder)], capture_output=True, timeout=30)


def fill(folder: Path) -> int:
    """Write a file into ``folder`` until its filesystem is full; the bytes written."""
    written = 0
    chunk = b"\0" * FILL_CHUNK
    with open(folder / FILLER, "wb", buffering=0) as out:
        while True:
            try:
                written += out.write(chunk)
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
                return written


def empty(folder: Path) -> None:
    """Remove what :func:`fill` wrote."""
    (folder / FILLER).unlink(missing_ok=True)
    os.sync()


class NetworkCut:
    """Cuts processes off the network, each started in a cgroup (v2) of its own: an
    nftables rule drops every packet their sockets send, to anyone, on any port, so
    their connections stall as across a partition. Needs root and nftables (Debian
    package nftables, which .ci/run installs). A socket belongs to the cgroup its process
    was in when it made it, so the process must start inside (:meth:`launcher`)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.root = _cgroup2_root()
        self.table = name.replace("-", "_")
        self._cut: set[str] = set()

    def launcher(self, member: str) -> tuple[str, ...]:
        """The prefix of a command that runs it in ``member``'s cgroup."""
        group = self.root / f"{self.name}-{member}"
        group.mkdir(exist_ok=True)
        return ("sh", "-c", f'echo $$ > "{group}/cgroup.procs" && exec "$@"', "sh")

    def cut(self, member: str) -> None:
        relative = (self.root / f"{self.name}-{member}").relative_to(CGROUP_ROOT)
        # nft names a cgroup by its path under /sys/fs/cgroup; level 1: a child of the root
        rules = (
            f"table inet {self.table} {{\n chain {member} {{\n  type filter hook output "
            f'priority 0;\n  socket cgroupv2 level 1 "{relative}" drop\n }}\n}}\n'
        )
        _nft("-f", "-", stdin=rules)
        self._cut.add(member)

    def heal(self, member: str) -> None:
        _nft("delete", "chain", "inet", self.table, member)
        self._cut.discard(member)

    def heal_all(self) -> None:
        for member in list(self._cut):
            self.heal(member)

    def close(self) -> None:
        """Heal every cut, drop the table and the cgroups (their processes stopped)."""
        self.heal_all()
        subprocess.run(["nft", "delete", "table", "inet", self.table], capture_output=True,
                       timeout=30)  # fmt: skip
        for group in self.root.glob(f"{self.name}-*"):
            for _ in range(50):  # a process still leaving it
                try:
                    group.rmdir()
                    break
                except OSError:
                    time.sleep(0.1)


CGROUP_ROOT = Path("/sys/fs/cgroup")


def _cgroup2_root() -> Path:
    """Where cgroup v2 is mounted: /sys/fs/cgroup, or /sys/fs/cgroup/unified beside v1."""
    for line in Path("/proc/mounts").read_text().splitlines():
        fields = line.split()
        if len(fields) > 2 and fields[2] == "cgroup2" and fields[1].startswith(str(CGROUP_ROOT)):
            return Path(fields[1])
    raise ConfigurationError(
        "cutting a process off the network needs cgroup v2 mounted "
        f"under {CGROUP_ROOT}; /proc/mounts has none"
    )


def _nft(*args: str, stdin: str | None = None) -> None:
    try:
        done = subprocess.run(["nft", *args], input=stdin, capture_output=True, text=True,
                              timeout=30)  # fmt: skip
    except FileNotFoundError as exc:
        raise ConfigurationError(
            "cutting a process off the network needs nft (Debian package nftables)"
        ) from exc
    if done.returncode != 0:
        raise ConfigurationError(f"nft {' '.join(args)} failed: {done.stderr.strip()}")
