"""What some faults need of the machine: a process whose clock is skewed, and a small
filesystem of the run's own that can be filled up."""

from __future__ import annotations

import errno
import os
import subprocess
from pathlib import Path

from pipeline.errors import ConfigurationError

SKEWED_CLOCK_PATH = Path(__file__).parent / "skewed_clock"
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
