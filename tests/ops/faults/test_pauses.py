"""Pauses: a process stopped by a run is stopped (state T) until continued, and a run
continues everything it left stopped."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from jobstream._ops.faults.pauses import Pauses
from tests.support.waiting import wait_for


def _state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


@pytest.fixture
def sleepers(child_processes: None) -> Iterator[dict[str, int]]:
    processes = [subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
                 for _ in range(2)]  # fmt: skip
    yield {"a": processes[0].pid, "b": processes[1].pid}
    for process in processes:
        process.kill()
        process.wait()


def test_a_paused_process_stops_until_resumed(sleepers: dict[str, int]) -> None:
    pauses: Pauses[str] = Pauses(sleepers.__getitem__)

    assert pauses.pause("a") == sleepers["a"]
    assert "a" in pauses and "b" not in pauses
    wait_for(lambda: _state(sleepers["a"]) == "T", what="process a stopped")
    assert _state(sleepers["b"]) != "T"

    pauses.resume("a")
    assert "a" not in pauses
    wait_for(lambda: _state(sleepers["a"]) != "T", what="process a continued")


def test_resume_all_continues_everything_and_forgets_what_is_gone(
    sleepers: dict[str, int],
) -> None:
    pids = dict(sleepers)
    pauses: Pauses[str] = Pauses(lambda key: pids[key])
    pauses.pause("a")
    pauses.pause("b")
    del pids["b"]  # its lookup now fails, as a node's pid does once it has exited

    with pytest.raises(KeyError):
        pauses.resume_all()
    pauses.resume_all(gone=KeyError)

    assert "a" not in pauses and "b" not in pauses
    wait_for(lambda: _state(sleepers["a"]) != "T", what="process a continued")
    os.kill(sleepers["b"], signal.SIGCONT)  # b was left stopped: the fixture kills it anyway
