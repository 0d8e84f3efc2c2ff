"""``jobstream worker`` as a process: SIGTERM drains, the job in flight is committed."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

from jobstream._pipeline.topics import Topics
from tests.pipeline.worker.executions import execution_requested, submit
from tests.pipeline.worker.support import EventLog, TopicReader, committed_offsets
from tests.support.pipeline import process_env

ROOT = Path(__file__).resolve().parents[3]


def start(topics: Topics, tmp_path: Path, *args: str) -> subprocess.Popen[bytes]:
    env = process_env(topics.settings)
    log = open(tmp_path / "worker.log", "ab")  # noqa: SIM115 - the process owns it
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jobstream._pipeline",
            "worker",
            "--app",
            "tests.pipeline.worker.sample_app",
            *args,
        ],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )


def test_sigterm_drains_and_commits_the_job_in_flight(
    topics: Topics, tmp_path: Path, events: EventLog, workers_topic: TopicReader
) -> None:
    (execution_id,) = submit(topics, execution_requested(params={"seconds": 3, "echo": "hi"}))
    process = start(topics, tmp_path, "--type", "data.process", "--concurrency", "2",
                    "--worker-id", "cli-worker", "--heartbeat", "0.5s")  # fmt: skip
    try:
        events.wait(execution_id, "STARTED", timeout_s=90)
        process.send_signal(signal.SIGTERM)
        assert process.wait(60) == 0, (tmp_path / "worker.log").read_text()
    finally:
        if process.poll() is None:
            process.kill()
    done = events.wait(execution_id, "SUCCEEDED")[0]
    assert done["worker_id"] == "cli-worker"
    assert '"echo":"hi"' in done["result"]
    assert committed_offsets(topics.settings, "data.process") == 1
    health = [r for r in workers_topic.catch_up() if r["worker_id"] == "cli-worker"]
    states = [r["state"] for r in health]
    assert states[0] == "STARTING" and "DRAINING" in states and states[-1] == "STOPPED"
    draining = next(r for r in health if r["state"] == "DRAINING")
    assert draining["running"] == [execution_id]
    assert done["at_ms"] >= draining["at_ms"], "the job finished during the drain"


def test_a_type_without_a_handler_is_refused(topics: Topics, tmp_path: Path) -> None:
    process = start(topics, tmp_path, "--type", "no.such.type")
    assert process.wait(60) != 0
    assert "no handler for job type 'no.such.type'" in (tmp_path / "worker.log").read_text()
