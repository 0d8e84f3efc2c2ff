"""The Celery + Redis peer of ``jobstream bench`` (ops/bench/peer).

Pure parts (tally, journal, load, worker shape, install decisions, /proc reading) are
unit-tested; two small real runs start redis-server and a Celery worker, installing them
first with ensure_installed() as ``jobstream bench`` does (CI starts on a clean machine).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from jobstream._ops.bench.load import Load
from jobstream._ops.bench.measure import cpu_seconds
from jobstream._ops.bench.peer import install, journal
from jobstream._ops.bench.peer.errors import PeerInstallError
from jobstream._ops.bench.peer.procs import children, family, family_cpu_seconds
from jobstream._ops.bench.peer.tally import tally
from jobstream._ops.bench.peer.worker import WorkerShape
from jobstream._ops.kafka.ports import free_base_port
from tests.support.tools import unavailable

# --- tally ---------------------------------------------------------------------------


def test_tally_counts_lost_duplicates_and_lateness() -> None:
    starts = [(0, 1000, 1002), (1, 1010, 1015), (1, 1010, 1400), (2, 1020, 1020)]
    ends = [(0, 1000, 1003), (1, 1010, 1016), (1, 1010, 1401), (2, 1020, 1999)]
    result = tally(4, 1000, starts, ends)
    assert result["submitted"] == 4
    assert result["completed"] == 3
    assert result["lost"] == 1  # job 3 never ended
    assert result["duplicates"] == 1  # job 1 started twice
    assert result["start_lateness_ms"] == {"count": 4, "p50": 2.0, "p90": 390.0,
                                           "p99": 390.0, "max": 390.0}  # fmt: skip
    assert result["end_lateness_ms"]["max"] == 979.0  # job 2
    assert result["end_lateness_ms"]["count"] == 3
    assert result["fire_lateness_ms"] is None
    assert result["last_end_ms"] == 1999
    assert result["jobs_per_s"] == pytest.approx(3 / 0.999)


def test_tally_ignores_records_of_jobs_not_submitted_and_survives_an_empty_run() -> None:
    result = tally(1, 0, [(5, 0, 10), (0, 0, 7)], [(5, 0, 11), (-1, 0, 1)])
    assert result["completed"] == 0 and result["lost"] == 1 and result["duplicates"] == 0
    assert result["start_lateness_ms"]["count"] == 1
    assert result["jobs_per_s"] == 0.0


# --- journal -------------------------------------------------------------------------


def test_journal_writes_per_process_files_and_reads_whole_records(tmp_path: Path) -> None:
    writer = journal.Journal(tmp_path)
    writer.write(journal.START, 7, 100, 105)
    writer.write(journal.END, 7, 100, 106)
    writer.write(journal.START, 8, 200, 201)
    assert journal.count(tmp_path, journal.START) == 2
    assert journal.count(tmp_path, journal.END) == 1
    # A process killed in the middle of a write leaves a torn last record: left out.
    with open(tmp_path / "start-999999.bin", "wb") as torn:
        torn.write(journal.RECORD.pack(9, 300, 301) + b"\x01\x02")
    assert sorted(journal.read(tmp_path, journal.START)) == [(7, 100, 105), (8, 200, 201),
                                                            (9, 300, 301)]  # fmt: skip
    assert journal.read(tmp_path, journal.END) == [(7, 100, 106)]


@pytest.mark.usefixtures("child_processes")
def test_journal_opens_new_files_in_a_forked_child(tmp_path: Path) -> None:
    writer = journal.Journal(tmp_path)
    writer.write(journal.START, 1, 0, 0)
    pid = os.fork()
    if pid == 0:  # the child: what a prefork pool process does with the inherited writer
        writer.write(journal.START, 2, 0, 0)
        os._exit(0)
    os.waitpid(pid, 0)
    files = sorted(p.name for p in tmp_path.glob("start-*.bin"))
    assert files == sorted([f"start-{os.getpid()}.bin", f"start-{pid}.bin"])
    assert sorted(journal.read(tmp_path, journal.START)) == [(1, 0, 0), (2, 0, 0)]


# --- load and worker shape -----------------------------------------------------------


def test_worker_shape_defaults_per_handler_and_validation() -> None:
    assert WorkerShape.for_handler("noop") == WorkerShape(pool="threads", concurrency=1, nodes=2)
    assert WorkerShape.for_handler("sleep10") == WorkerShape(pool="threads", concurrency=64)
    with pytest.raises(ValueError):
        WorkerShape(pool="gevent")
    with pytest.raises(ValueError):
        WorkerShape(concurrency=0)


# --- /proc of a process family -------------------------------------------------------


@pytest.mark.usefixtures("child_processes")
def test_family_includes_children_and_their_cpu() -> None:
    burn = (
        "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass\n"
        "import sys; sys.stdout.write('x'); sys.stdout.flush(); time.sleep(30)"
    )
    child = subprocess.Popen([sys.executable, "-c", burn], stdout=subprocess.PIPE)
    try:
        assert child.stdout is not None and child.stdout.read(1) == b"x"
        assert child.pid in family(os.getpid())
        assert family_cpu_seconds(os.getpid()) >= cpu_seconds(os.getpid()) + 0.25
    finally:
        child.kill()
        child.wait()


# --- install decisions ---------------------------------------------------------------


class _Commands:
    """Stands in for subprocess: records commands, fails those named in ``failing``."""

    def __init__(self, failing: Sequence[str]) -> None:
        self.failing = failing
        self.ran: list[str] = []

    def __call__(self, command: Sequence[str]) -> subprocess.CompletedProcess[str]:
        line = " ".join(command)
        self.ran.append(line)
        failed = any(line.startswith(prefix) for prefix in self.failing)
        return subprocess.CompletedProcess(
            list(command), 100 if failed else 0, "", "E: Unable to locate package" if failed else ""
        )


def test_redis_install_updates_package_lists_only_after_a_failed_install(
        monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    commands = _Commands(failing=["apt-get install"])
    monkeypatch.setattr(install, "_run", commands)
    monkeypatch.setattr(
        install.shutil, "which", lambda name: "/usr/bin/apt-get" if name == "apt-get" else None
    )
    with pytest.raises(PeerInstallError, match="apt-get install redis-server failed"):
        install.ensure_redis_server(lambda _: None)
    assert commands.ran == ["apt-get install -y redis-server", "apt-get update",
                            "apt-get install -y redis-server"]  # fmt: skip


def test_redis_install_is_skipped_when_redis_server_is_on_path(
        monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    commands = _Commands(failing=[])
    monkeypatch.setattr(install, "_run", commands)
    monkeypatch.setattr(install.shutil, "which", lambda name: f"/usr/bin/{name}")
    assert install.ensure_redis_server(lambda _: None) == "/usr/bin/redis-server"
    assert commands.ran == []


def test_a_failed_pip_install_names_the_requirement(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(install, "_run", _Commands(failing=[sys.executable]))
    monkeypatch.setattr(install, "_celery_usable", lambda: False)
    with pytest.raises(PeerInstallError, match=r"pip install 'celery\[redis\]"):
        install.ensure_celery(lambda _: None)


# --- real runs -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def installed(child_processes: None) -> None:
    """redis-server and celery, installed as ``jobstream bench`` installs them."""
    try:
        install.ensure_installed(print)
    except PeerInstallError as exc:
        unavailable(f"the Celery peer could not be installed: {exc}")


def _run(tmp_path: Path, load: Load, handler: str,
         shape: WorkerShape | None = None) -> dict[str, Any]:  # fmt: skip
    from jobstream._ops.bench.peer.run import run_peer

    return run_peer(load=load, handler=handler, workdir=tmp_path, port=free_base_port(1),
                    progress=None, shape=shape)  # fmt: skip


def _assert_complete(result: dict[str, Any], jobs: int) -> None:
    assert result["system"] == "celery" and result["fire_lateness_ms"] is None
    assert (result["submitted"], result["completed"]) == (jobs, jobs)
    assert (result["lost"], result["duplicates"]) == (0, 0)
    lateness = result["start_lateness_ms"]
    assert lateness["count"] == jobs
    assert 0 <= lateness["p50"] <= lateness["p99"] <= lateness["max"]
    assert result["jobs_per_s"] > 0 and result["submit_per_s"] > 0
    assert (
        set(result["rss_mb"])
        == set(result["cpu_s"])
        == {"celery worker", "redis-server", "bench (submitter)"}
    )
    assert result["rss_mb"]["celery worker"] > 20  # the main process and its pool
    assert result["cpu_s"]["celery worker"] > 0 and result["cpu_us_per_job"] > 0


@pytest.mark.usefixtures("installed")
def test_steady_run_on_celery_loses_nothing(tmp_path: Path) -> None:
    result = _run(tmp_path, Load.steady(rate=100, duration_s=2, lead_s=1), "noop")
    _assert_complete(result, 200)
    assert (result["scenario"], result["pool"], result["nodes"]) == ("steady", "threads", 2)


@pytest.mark.usefixtures("installed")
def test_burst_run_on_celery_loses_nothing(tmp_path: Path) -> None:
    result = _run(tmp_path, Load.burst(500, lead_s=4), "sleep10")
    _assert_complete(result, 500)
    assert (result["scenario"], result["pool"]) == ("burst", "threads")
    assert _peer_children() == []  # Redis and the worker were stopped (and reaped)


@pytest.mark.usefixtures("installed")
def test_two_worker_nodes_share_the_queue(tmp_path: Path) -> None:
    shape = WorkerShape(pool="threads", concurrency=2, nodes=2)
    result = _run(tmp_path, Load.burst(400, lead_s=4), "noop", shape)
    _assert_complete(result, 400)
    assert result["nodes"] == 2
    journal_dir = Path(result["work_dir"]) / "journal"
    writers = [p for p in journal_dir.glob("start-*.bin") if p.stat().st_size]
    assert len(writers) == 2  # each node ran some of the tasks, in a process of its own
    assert _peer_children() == []  # both nodes were stopped


def _peer_children() -> list[str]:
    commands = [Path(f"/proc/{pid}/cmdline").read_bytes() for pid in children(os.getpid())]
    return [c.decode() for c in commands if b"celery" in c or b"redis-server" in c]
