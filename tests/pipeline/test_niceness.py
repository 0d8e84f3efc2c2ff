"""``JOBSTREAM_NICE``: the CPU priority a process takes at its start, never a higher one."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from pydantic import ValidationError

from jobstream._pipeline.config import Settings

_SHOW = (
    "import os; from jobstream._pipeline.cli_options import take_niceness; "
    "from jobstream._pipeline.config import load_settings; take_niceness(load_settings()); "
    "print(os.getpriority(os.PRIO_PROCESS, 0))"
)


def _niceness_after_start(nice: str, started_at: int = 0) -> int:
    env = {**os.environ, "JOBSTREAM_NICE": nice}
    out = subprocess.run(
        [sys.executable, "-c", _SHOW], env=env, capture_output=True, text=True, check=True,
        preexec_fn=lambda: os.nice(started_at),
    )  # fmt: skip
    return int(out.stdout)


@pytest.mark.usefixtures("child_processes")
def test_a_process_takes_the_niceness_it_is_given() -> None:
    own = os.getpriority(os.PRIO_PROCESS, 0)  # what the test's children start at
    assert _niceness_after_start("0") == own
    assert _niceness_after_start("7") == max(7, own)


@pytest.mark.usefixtures("child_processes")
def test_a_process_started_nicer_keeps_its_own() -> None:
    assert _niceness_after_start("7", started_at=12) == os.getpriority(os.PRIO_PROCESS, 0) + 12


@pytest.mark.parametrize("nice", [-1, 20])
def test_a_niceness_out_of_range_is_refused_by_name(nice: int) -> None:
    with pytest.raises(ValidationError, match="nice"):
        Settings(nice=nice)
