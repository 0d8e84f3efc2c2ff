"""jobstream as a user who has only the wheel has it: built from the files the image copies,
installed in a virtualenv of its own, run from a folder outside the checkout."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "ops" / "deploy" / "Dockerfile"

_COPY = re.compile(r"^COPY\s+(?!--)(.+)\s+\S+\s*$", re.MULTILINE)
_LEFTOVERS = shutil.ignore_patterns("__pycache__", "*.pyc", "build", "*.egg-info")


def wheel_inputs() -> list[str]:
    """What the image's wheel stage copies from the checkout: its COPY lines' sources."""
    return [source for line in _COPY.findall(DOCKERFILE.read_text()) for source in line.split()]


def _checked(command: list[str], timeout_s: float) -> None:
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s)
    if done.returncode != 0:
        raise AssertionError(f"{' '.join(command)} exited {done.returncode}:\n"
                             f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}")  # fmt: skip


def build_wheel(work: Path) -> Path:
    """The wheel, built from a copy of only those files, so that a build/ or egg-info
    left in the checkout cannot supply a file the package fails to ship."""
    source = work / "source"
    source.mkdir(parents=True)
    for name in wheel_inputs():
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, source / name, symlinks=True, ignore=_LEFTOVERS)
        else:
            shutil.copy2(ROOT / name, source / name)
    dist = work / "dist"
    _checked([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet",
              "--wheel-dir", str(dist), str(source)], timeout_s=600)  # fmt: skip
    (wheel,) = dist.glob("jobstream-*.whl")
    return wheel


@dataclass(frozen=True)
class Installed:
    """A virtualenv holding the wheel and what it depends on, and nothing of the checkout."""

    venv: Path
    home: Path
    """The working folder of every command: outside the checkout, as a user's would be."""

    @property
    def jobstream(self) -> str:
        return str(self.venv / "bin" / "jobstream")

    @property
    def site_packages(self) -> Path:
        (found,) = self.venv.glob("lib/python*/site-packages")
        return found

    def env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """Our environment without its jobstream settings, with a PYTHONPATH that is empty
        (Python ignores it then), so that nothing reaches the checkout's packages."""
        kept = {k: v for k, v in os.environ.items()
                if not k.startswith(("JOBSTREAM_", "KAFKA_")) and k != "VIRTUAL_ENV"}  # fmt: skip
        return {**kept, "PYTHONPATH": "", **(extra or {})}

    def run(self, *args: str, env: Mapping[str, str] | None = None,
            timeout_s: float = 120) -> subprocess.CompletedProcess[str]:  # fmt: skip
        """``jobstream *args`` run from :attr:`home`; ``env`` adds to :meth:`env`."""
        return subprocess.run([self.jobstream, *args], cwd=self.home, env=self.env(env),
                              capture_output=True, text=True, timeout=timeout_s)  # fmt: skip


def install(wheel: Path, work: Path) -> Installed:
    """A new virtualenv under ``work`` with ``wheel`` installed by pip (dependencies from
    the package index, or pip's cache)."""
    venv, home = work / "venv", work / "home"
    home.mkdir(parents=True)
    # No pip of its own (ensurepip is slow): ours installs into it with --python.
    _checked([sys.executable, "-m", "venv", "--without-pip", str(venv)], timeout_s=120)
    _checked([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install",
              "--quiet", str(wheel)], timeout_s=900)  # fmt: skip
    return Installed(venv, home)
