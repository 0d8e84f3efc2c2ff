"""``jobstream bench`` end to end against the test broker, at a rate any machine keeps."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from confluent_kafka.admin import AdminClient
from typer.testing import CliRunner, Result

from jobstream._ops.bench.peer.procs import family
from jobstream._ops.command import app
from jobstream._ops.kafka.ports import free_base_port
from jobstream._pipeline.config import Settings
from tests.support.waiting import wait_for

REQUIRED = ("scenario", "submitted", "completed", "lost", "duplicates", "jobs_per_s",
            "fire_lateness_ms", "start_lateness_ms", "rss_mb")  # fmt: skip


def bench(kafka_bootstrap: str, tmp_path: Path, scenario: str,
          *args: str) -> tuple[Result, dict[str, Any]]:  # fmt: skip
    """``jobstream bench --scenario <scenario> <args>`` on the test broker, in ``tmp_path``:
    its output (exit code 0 asserted) and its report."""
    out = tmp_path / f"{scenario}.json"
    result = CliRunner().invoke(app, [
        "bench", "--scenario", scenario, *args, "--bootstrap", kafka_bootstrap,
        "--workdir", str(tmp_path / "bench"), "--metrics-port", str(free_base_port(4)),
        "--out", str(out),
    ])  # fmt: skip
    assert result.exit_code == 0, result.output
    return result, orjson.loads(out.read_bytes())


def test_a_small_steady_run_reports_every_job_ended_once(kafka_bootstrap: str,
                                                         tmp_path: Path) -> None:  # fmt: skip
    result, report = bench(kafka_bootstrap, tmp_path, "steady", "--rate", "100",
                           "--duration", "3s", "--lead", "3s", "--peer", "none")  # fmt: skip
    assert set(REQUIRED) <= report.keys()
    assert (report["submitted"], report["completed"], report["lost"]) == (300, 300, 0)
    assert report["duplicates"] == 0
    assert report["rate"] == 100 and "burst" not in report and "count" not in report
    lead = Settings().fire_lead  # the bench's processes read the same environment
    for key, least in (("fire_lateness_ms", -lead), ("start_lateness_ms", 0)):
        assert set(report[key]) >= {"p50", "p90", "p99", "max"}
        assert least <= report[key]["p50"] <= report[key]["max"]
    assert report["rss_mb"]["timers"] > 0 and report["rss_mb"]["worker-bench-0"] > 0
    assert report["status_caught_up_after_s"] is not None
    machine = report["machine"]
    assert min(machine["reference_cpu_ms"], machine["reference_cpu_ms_end"]) > 0, (
        "how fast the machine ran Python at the run's start and end"
    )
    assert "end-to-end jobs/s" in result.output
    assert "reference loop" in result.output
    prefix = Path(report["work_dir"]).name + "."
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    wait_for(lambda: not [name for name in admin.list_topics(timeout=10).topics
                          if name.startswith(prefix)],
             timeout_s=10, what="the run's topics deleted when it ends")  # fmt: skip


def test_a_small_diamonds_run_reports_release_lateness(kafka_bootstrap: str,
                                                       tmp_path: Path) -> None:  # fmt: skip
    result, report = bench(kafka_bootstrap, tmp_path, "diamonds", "--diamonds", "20",
                           "--lead", "4s", "--peer", "none")  # fmt: skip
    assert (report["submitted"], report["completed"], report["lost"]) == (80, 80, 0)
    assert (report["children"], report["children_started"]) == (60, 60)
    assert report["diamonds"] == 20 and "count" not in report, "what the scenario offered"
    release = report["release_lateness_ms"]
    assert 0 <= release["p50"] <= release["max"], "a child never starts before its parents end"
    assert "release lateness" in result.output


def test_the_two_owner_scenario_reports_each_owners_start_lateness(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    result, report = bench(kafka_bootstrap, tmp_path, "fairness", "--burst", "300",
                           "--small", "10", "--lead", "5s")  # fmt: skip
    assert (report["submitted"], report["completed"], report["lost"]) == (310, 310, 0)
    assert "peer" not in report  # Celery has no owners to share between
    by_owner = report["start_lateness_by_owner_ms"]
    assert (by_owner["owner-a"]["count"], by_owner["owner-b"]["count"]) == (300, 10)
    assert "start lateness ms, owner-b" in result.output


def test_a_burst_claimed_ahead_by_the_workers_flags(
    kafka_bootstrap: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--claim-ahead`` and ``--claimed-ahead-most`` reach every worker of the run."""
    monkeypatch.setenv("JOBSTREAM_FIRE_LEAD", "3s")
    _, report = bench(kafka_bootstrap, tmp_path, "burst", "--burst", "200", "--lead", "5s",
                      "--peer", "none", "--claim-ahead", "3s",
                      "--claimed-ahead-most", "500")  # fmt: skip
    assert (report["submitted"], report["completed"], report["lost"]) == (200, 200, 0)
    assert report["launch_lateness"]["count"] == 200
    # Claimed ahead, each STARTED says its instant; each run's end tells its launch, which
    # the start lateness is: within the bucket the workers' histogram counted it in.
    assert report["start_launches_told"] == 200
    within = report["launch_lateness"]["max_within_ms"]
    assert within is None or 0 <= report["start_lateness_ms"]["max"] <= within
    assert report["fire_lateness_ms"]["max"] < 0, "every job fired ahead of its instant"
    [started] = [orjson.loads(line) for line in
                 (Path(report["work_dir"]) / "logs" / "worker-bench-0.log").read_text().splitlines()
                 if '"worker started"' in line]  # fmt: skip
    assert (started["claim_ahead_s"], started["claimed_ahead_most"]) == (3.0, 500)


@pytest.mark.timeout(420)
def test_a_benchmark_stopped_with_sigterm_stops_the_processes_it_started(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    command = [
        sys.executable,
        "-m",
        "jobstream",
        "bench",
        "--scenario",
        "steady",
        "--rate",
        "20",
        "--duration",
        "120s",
        "--peer",
        "none",
        "--bootstrap",
        kafka_bootstrap,
        "--workdir",
        str(tmp_path / "bench"),
        "--metrics-port",
        str(free_base_port(4)),
    ]
    log = tmp_path / "bench.log"
    with log.open("wb") as out:
        bench = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    try:
        started = wait_for(lambda: len(family(bench.pid)) >= 5, timeout_s=240,
                           what="the benchmark's pipeline processes")  # fmt: skip
        pipeline = family(bench.pid)[1:]
        assert started

        bench.send_signal(signal.SIGTERM)
        # Its bound: the processes' own stop (30 s, then SIGKILL) and deleting the run's
        # topics (two admin calls of 10 s at most, ops/bench/harness.py).
        try:
            bench.wait(STOP_BOUND_S)
        except subprocess.TimeoutExpired:
            pytest.fail(f"still running {STOP_BOUND_S} s after SIGTERM\n{_stack(bench.pid)}\n"
                        f"its output:\n{log.read_text(errors='replace')[-4000:]}")  # fmt: skip
        assert wait_for(lambda: not any(_alive(pid) for pid in pipeline), timeout_s=60,
                        what="the pipeline processes to stop"), pipeline  # fmt: skip
    finally:
        if bench.poll() is None:
            bench.kill()


STOP_BOUND_S = 90


def _stack(pid: int) -> str:
    """Where a process is stuck, as py-spy sees it."""
    py_spy = Path(sys.executable).with_name("py-spy")
    done = subprocess.run([str(py_spy), "dump", "--pid", str(pid)], capture_output=True,
                          text=True, timeout=60, check=False)  # fmt: skip
    return done.stdout + done.stderr


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except FileNotFoundError:
        return False
