"""The README's first command, ``make run``, end to end: broker, topics and the demo.

It runs the Makefile's own ``run`` target (set-up included, a no-op once ``make test`` has
set up), on a broker of its own on free ports with its own folders, and fails unless the
demo ends green. The broker it started is stopped at the end. Its warm-up runs 3 s, not
the default 20 s (``JOBSTREAM_KAFKA_WARM_UP``): the same traffic and clean-up, shorter, since
the demo waits for its jobs without a bound on their lateness.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from jobstream._ops.kafka.ports import free_base_port, free_ports
from tests.support.tools import IN_CI

ROOT = Path(__file__).resolve().parents[2]
WARM_UP = "3s"


@pytest.mark.timeout(900)
@pytest.mark.usefixtures("child_processes")
def test_make_run_starts_a_broker_and_the_demo_ends_green(tmp_path: Path) -> None:
    kafka_home = tmp_path / "kafka"
    env = {k: v for k, v in os.environ.items() if not k.startswith("JOBSTREAM_")}
    env["JOBSTREAM_KAFKA_HOME"] = str(kafka_home)
    env["JOBSTREAM_KAFKA_WARM_UP"] = WARM_UP
    command = ["make", "-C", str(ROOT), "run", f"KAFKA_PORT={free_base_port(1)}",
               f"DEMO_ARGS=--home {tmp_path / 'demo'} --base-port {free_ports(6)}"]  # fmt: skip
    try:
        run = subprocess.run(command, env=env, capture_output=True, text=True, timeout=840)
    finally:
        subprocess.run([str(ROOT / ".venv/bin/jobstream"), "kafka", "down", "--home",
                        str(kafka_home)], env=env, capture_output=True, timeout=120)  # fmt: skip
    shown = f"make run exited {run.returncode}:\n{run.stdout[-4000:]}\n{run.stderr[-4000:]}"
    if run.returncode != 0 and not IN_CI and "Kafka" in run.stderr and "java" in run.stderr:
        pytest.skip(f"Kafka cannot run here: {run.stderr[-500:]}")
    assert run.returncode == 0, shown
    assert "every demo job settled" in run.stdout, shown
    warmed = re.search(r"warmed up: ([\d,]+) records in ([\d,]+) transactions, .*", run.stdout)
    assert warmed and "stopped early" not in warmed[0], f"the broker was not warmed up:\n{shown}"
    assert int(warmed[1].replace(",", "")) > 0, warmed[0]
    for story in ("SUCCEEDED", "DEAD_LETTERED", "CANCELLED", "PAUSED"):
        assert story in run.stdout, f"the demo never showed a job {story}:\n{shown}"
