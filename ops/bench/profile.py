"""py-spy recordings of a benchmark's processes, summarised by
jobstream._ops.bench.measure.top_frames.

py-spy samples a running process from outside (``--nonblocking``: without pausing it),
so the process measured runs the code it runs in production. With ``idle`` the samples
of waiting threads are kept (shares of wall-clock time), otherwise only busy ones
(shares of the process's CPU).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from jobstream._ops.bench import measure


def py_spy() -> str | None:
    """The py-spy beside this interpreter (a venv not on PATH), else on PATH."""
    beside = Path(sys.executable).with_name("py-spy")
    return str(beside) if beside.exists() else shutil.which("py-spy")


class Recording:
    """py-spy recording one process for ``seconds`` into ``output`` (collapsed stacks)."""

    def __init__(self, executable: str, pid: int, seconds: float, output: Path, *,
                 idle: bool) -> None:  # fmt: skip
        self.output = output
        self.process = subprocess.Popen(
            [executable, "record", "--pid", str(pid), "--duration", str(max(1, int(seconds))),
             "--rate", "50", "--nonblocking", *(["--idle"] if idle else []),
             "--format", "raw", "--output", str(output)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip

    def summary(self) -> dict[str, Any]:
        """Wait for the recording to end; its file and top frames (empty if it failed)."""
        self.process.wait()
        if not self.output.exists():
            return {}
        return {"file": str(self.output), **measure.top_frames(self.output)}
