"""Replay equals live: jobs.status rebuilt from jobs.events, and the timers' stores rebuilt
from their changelog, against what the live processors made on the real broker."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

from jobstream._pipeline.jobs.client import JobClient
from jobstream._pipeline.kafka import clients
from jobstream._pipeline.model.job import JobRequest
from jobstream._pipeline.model.lifecycle import JobState
from jobstream._pipeline.replay.status import compare, live_statuses, rebuild_statuses
from jobstream._pipeline.replay.stores import rebuild_stores
from jobstream._pipeline.state.store import PartitionStore
from jobstream._pipeline.status.processor import STATUS_OPTIONS, status_runner
from jobstream._pipeline.status.query import read_statuses
from jobstream._pipeline.status.record import RECORD_HEADER
from jobstream._pipeline.timers.processor import TIMER_OPTIONS, TimerProcessor, timer_runner
from jobstream._pipeline.topics import Topics
from tests.support.pipeline import in_thread, process_env
from tests.support.waiting import wait_for

S = JobState
FUTURE = "2030-01-01T00:00:00Z"


def submit_mix(topics: Topics) -> dict[str, JobState]:
    """A job due now (fires, no worker: QUEUED), one in the future, a schedule, a paused
    schedule and a cancelled job: the states each should reach."""
    requests = {
        "now": JobRequest(job_type="data.process", owner="acme", labels={"k": "v"}),
        "later": JobRequest(job_type="data.process", owner="acme", run_at=FUTURE, params={"n": 1}),
        "nightly": JobRequest(job_type="report.generate", owner="bolt", cron="0 2 * * *"),
        "paused": JobRequest(job_type="report.generate", owner="bolt", cron="0 3 * * *"),
        "cancelled": JobRequest(job_type="data.process", owner="acme", run_at=FUTURE),
    }
    with JobClient(topics.settings) as client:
        ids = {name: client.submit(request) for name, request in requests.items()}
        client.pause(ids["paused"])
        client.cancel(ids["cancelled"])
    return {ids["now"]: S.QUEUED, ids["later"]: S.SCHEDULED, ids["nightly"]: S.SCHEDULED,
            ids["paused"]: S.PAUSED, ids["cancelled"]: S.CANCELLED}  # fmt: skip


@pytest.fixture
def live(topics: Topics, tmp_path: Path) -> Iterator[dict[str, JobState]]:
    """The timers and the status processor ran the mix until jobs.status showed it."""
    settings = topics.settings
    with ExitStack() as running:
        timers = TIMER_OPTIONS.evolve(instance_id="t", state_dir=tmp_path / "timers")
        status = STATUS_OPTIONS.evolve(instance_id="s", state_dir=tmp_path / "status")
        running.enter_context(in_thread(timer_runner(settings, timers)))
        running.enter_context(in_thread(status_runner(settings, status)))
        expected = submit_mix(topics)

        def shown() -> bool:
            found = read_statuses(settings, timeout_s=60)
            return all(job in found and found[job].state is state
                       for job, state in expected.items())  # fmt: skip

        wait_for(shown, timeout_s=120, interval_s=0.2, what=f"live states {expected}")
    yield expected


def test_jobs_status_rebuilt_from_jobs_events_equals_the_live_one(
    topics: Topics, live: dict[str, JobState]
) -> None:
    settings = topics.settings
    seen: list[tuple[int, int]] = []
    rebuilt = rebuild_statuses(settings, progress=lambda done, total: seen.append((done, total)))
    current = live_statuses(settings)
    assert set(rebuilt) == {job.encode() for job in live} == set(current)
    found = compare(rebuilt, current)
    assert (found.equal, found.differ, found.missing) == (len(live), [], [])
    assert seen and 0 < seen[-1][0] <= seen[-1][1]

    # jobs.status loses a job (a tombstone on its partition): the command puts its record
    # back there, with the headers the status processor restores from
    lost = next(iter(live)).encode()
    assert dict(rebuilt[lost].headers).keys() >= {RECORD_HEADER}
    producer = clients.producer(settings)
    producer.produce(topics.status, None, lost, partition=rebuilt[lost].partition)
    assert producer.flush(30) == 0
    assert lost not in live_statuses(settings)
    subprocess.run([sys.executable, "-m", "jobstream", "replay", "status"], check=True,
                   env=process_env(settings), capture_output=True, timeout=180)  # fmt: skip
    restored = live_statuses(settings)
    assert compare(rebuilt, restored).equal == len(live)


def data(store_dir: Path) -> dict[int, list[tuple[bytes, bytes]]]:
    """Every data entry (metadata keys start with 0x00) of each partition store."""
    found = {}
    for path in sorted(store_dir.iterdir()):
        store = PartitionStore(path)
        try:
            found[int(path.name)] = list(store.scan(b"\x01", b"\xff" * 64))
        finally:
            store.close()
    return found


def test_the_timers_state_rebuilt_from_its_changelog_equals_the_live_one(
    topics: Topics, live: dict[str, JobState], tmp_path: Path
) -> None:
    settings = topics.settings
    group = f"{settings.topic_prefix}jobstream.timers"
    live_dir = TIMER_OPTIONS.evolve(instance_id="t", state_dir=tmp_path / "timers") \
        .store_root(group)  # fmt: skip
    before = data(live_dir)
    assert sum(len(entries) for entries in before.values()) >= 4  # the pending jobs, indexed

    elsewhere = TIMER_OPTIONS.evolve(instance_id="t", state_dir=tmp_path / "rebuilt")
    applied = rebuild_stores(settings, TimerProcessor(settings), elsewhere)
    assert applied > 0
    assert data(elsewhere.store_root(group)) == before

    # in place, by the command, over the live files
    subprocess.run([sys.executable, "-m", "jobstream", "replay", "timers", "--instance-id", "t",
                    "--state-dir", str(tmp_path / "timers")], check=True,
                   env=process_env(settings), capture_output=True, timeout=180)  # fmt: skip
    assert data(live_dir) == before
