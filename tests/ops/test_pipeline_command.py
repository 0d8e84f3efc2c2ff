"""``jobstream pipeline`` as a user runs it: a supervisor that never strands a process.

Each test starts the command as a process on the session broker, with topics and folders
of its own, and reads what it prints. Killed with SIGKILL, or stopped with SIGTERM, it
leaves no child running; a child slow to become healthy is reported, waited for, and the
supervisor keeps going.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from confluent_kafka.admin import AdminClient

from jobstream._ops.kafka.ports import free_ports
from jobstream._pipeline.jobs.client import JobClient
from jobstream._pipeline.kafka.admin import ensure_topics
from jobstream._pipeline.lifeline import GRACE_S
from jobstream._pipeline.model.job import JobRequest
from jobstream._pipeline.status.query import read_statuses
from jobstream._pipeline.topics import Topics
from tests.support.pipeline import process_env
from tests.support.waiting import wait_for

PROCESSES = 7  # timers, status processor, retry router, trigger processor, a worker per demo type


class Supervisor:
    """A ``jobstream pipeline`` process and the lines it has printed so far."""

    def __init__(self, topics: Topics, home: Path, *extra: str) -> None:
        command = [sys.executable, "-m", "jobstream", "pipeline", "--home", str(home),
                   "--base-port", str(free_ports(PROCESSES)), *extra]  # fmt: skip
        self.process = subprocess.Popen(command, env=process_env(topics.settings),
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                        text=True)  # fmt: skip
        self.lines: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line.rstrip())

    def printed(self, *words: str) -> bool:
        return any(all(word in line for word in words) for line in self.lines)

    def wait_printed(self, *words: str, timeout_s: float = 120) -> None:
        wait_for(
            lambda: self.printed(*words),
            timeout_s=timeout_s,
            interval_s=0.2,
            what=f"a line with {words}; printed so far:\n" + "\n".join(self.lines),
        )

    def children(self) -> dict[int, str]:
        """Its child processes now: pid -> command line."""
        found = {}
        for task in Path(f"/proc/{self.process.pid}/task").iterdir():
            for pid in (task / "children").read_text().split():
                found[int(pid)] = _cmdline(int(pid))
        return found


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _alive(pid: int) -> bool:
    """Running, and not a zombie waiting for a parent to reap it."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@contextmanager
def supervisor(topics: Topics, home: Path, *extra: str) -> Iterator[Supervisor]:
    running = Supervisor(topics, home, *extra)
    try:
        yield running
    finally:
        if running.process.poll() is None:
            running.process.kill()
        running.process.wait(30)


def assert_all_gone(pids: dict[int, str]) -> None:
    wait_for(lambda: not any(_alive(pid) for pid in pids), timeout_s=GRACE_S + 30,
             interval_s=0.2, what="every child to end: still running "
             f"{[cmd for pid, cmd in pids.items() if _alive(pid)]}")  # fmt: skip


def test_sigterm_stops_the_supervisor_and_every_child(topics: Topics, tmp_path: Path) -> None:
    with supervisor(topics, tmp_path) as running:
        running.wait_printed("pipeline running")
        children = running.children()
        running.process.send_signal(signal.SIGTERM)
        assert running.process.wait(60) == 0
        assert not any(_alive(pid) for pid in children)


def test_a_slow_child_is_waited_for_and_none_outlives_a_sigkill(
    topics: Topics, tmp_path: Path
) -> None:
    with supervisor(topics, tmp_path, "--slow-after", "3s") as running:
        running.wait_printed("started", "processes")
        slow = next(pid for pid, cmd in running.children().items() if "status-processor" in cmd)
        os.kill(slow, signal.SIGSTOP)  # as a process stuck restoring its state would be
        try:
            running.wait_printed("status-processor not healthy", "still waiting", timeout_s=60)
            running.wait_printed("timers healthy")
            assert running.process.poll() is None, "the supervisor gave up"
            assert not running.printed("pipeline running")
        finally:
            os.kill(slow, signal.SIGCONT)
        running.wait_printed("status-processor healthy")
        running.wait_printed("pipeline running")
        children = running.children()
        assert len(children) == PROCESSES, children
        running.process.send_signal(signal.SIGKILL)
        running.process.wait(10)
        assert_all_gone(children)


def recreate(topics: Topics) -> None:
    """Delete every topic and make it again under the same names, as after a broker whose
    data was wiped: the same names, new topic ids, every log empty."""
    admin = AdminClient(topics.settings.kafka_config)
    names = [spec.name for spec in topics.specs()]
    for future in admin.delete_topics(names, operation_timeout=30).values():
        future.result(timeout=60)
    wait_for(lambda: not set(names) & set(admin.list_topics(timeout=10).topics), timeout_s=60,
             what="the deleted topics to be gone")  # fmt: skip
    ensure_topics(topics.settings.kafka_config, topics.specs(), replication_factor=1)


def succeeded(topics: Topics, job_id: str) -> bool:
    status = read_statuses(topics.settings, job_id=job_id, timeout_s=10).get(job_id)
    return status is not None and status.state == "SUCCEEDED"


def test_state_of_another_cluster_does_not_hold_the_pipeline_back(
    topics: Topics, tmp_path: Path
) -> None:
    request = JobRequest(job_type="data.process", owner="demo",
                         params={"group_by": "region", "metric": "units"})  # fmt: skip
    with supervisor(topics, tmp_path) as running, JobClient(topics.settings) as client:
        running.wait_printed("pipeline running")
        first = client.submit_many([request])[0]
        wait_for(lambda: succeeded(topics, first), timeout_s=60, interval_s=0.5,
                 what="the first job to succeed")  # fmt: skip
        running.process.send_signal(signal.SIGTERM)
        assert running.process.wait(60) == 0
    assert any((tmp_path / "state").rglob("CURRENT")), "the processors kept no state"

    recreate(topics)
    with supervisor(topics, tmp_path) as running, JobClient(topics.settings) as client:
        running.wait_printed("started", "processes")
        started = time.monotonic()
        job = client.submit_many([request])[0]
        wait_for(lambda: succeeded(topics, job), timeout_s=60, interval_s=0.5,
                 what="a job to succeed on the state of the cluster before")  # fmt: skip
        took = time.monotonic() - started
        running.wait_printed("pipeline running")
        assert running.process.poll() is None
        assert not running.printed("exited with"), "\n".join(running.lines)
        # Restoring each stale partition once waited 15 s for a changelog that would never
        # reach the store's checkpoint: 45 s and more before the first job could run.
        assert took < 30, f"the first job took {took:.1f} s to succeed"
