"""A rate limit on the real broker, with real processes: a timer process and a worker.

The limit (50/s on data.process, with the default burst of half a second: 25) is set on
jobs.limits after the timer process has started, so it also shows a limit applying with no
restart. 500 jobs fall due at one instant: they run in 10 s (+-1 s), none is lost, none
starts before its time, and the k-th start is no earlier than (k - burst) / 50 s after the
due instant, all read off jobs.events.
"""

from __future__ import annotations

from pathlib import Path

from jobstream._ops.kafka.ports import free_ports
from jobstream._ops.stack import Component, Stack, worker
from jobstream._pipeline.clock import now_ms
from jobstream._pipeline.limits.model import Limit, LimitKey
from jobstream._pipeline.limits.topic import read_limits, set_limit
from jobstream._pipeline.topics import Topics
from tests.pipeline.worker.support import EventLog
from tests.support.jobs import submitted
from tests.support.pipeline import process_env, produce
from tests.support.stack import APP
from tests.support.waiting import wait_for

JOBS, RATE, BURST = 500, 50, 25
LEAD_MS = 20_000
"""Time to schedule every job before they fall due together."""


def test_500_jobs_due_at_once_run_at_50_per_second(topics: Topics, tmp_path: Path) -> None:
    settings = topics.settings
    env = process_env(settings)
    env["JOBSTREAM_STATE_DIR"] = str(tmp_path / "state")
    stack = Stack(tmp_path, env)
    port = free_ports(2)
    events = EventLog(settings, topics.events, settings.events_partitions)
    try:
        stack.start(
            [
                Component("timers", ("timers", "--instance-id", "0"), port),
                worker("data.process", "limited", port + 1, app=APP, concurrency=8),
            ]
        )
        limit = Limit.of(LimitKey(job_type="data.process"), RATE)
        assert limit.burst == BURST
        set_limit(settings, limit)
        assert read_limits(settings) == [limit]
        due = now_ms() + LEAD_MS
        jobs = [submitted(run_at_ms=due, owner=f"owner-{i % 3}") for i in range(JOBS)]
        produce(settings, topics.intake, jobs)

        def count(kind: str) -> int:
            return len({r["job_id"] for r in events.poll() if r["kind"] == kind})

        wait_for(lambda: count("SCHEDULED") >= JOBS, timeout_s=LEAD_MS / 1000,
                 what="every job scheduled")  # fmt: skip
        assert now_ms() < due, "scheduling took longer than the lead: the test proves nothing"
        wait_for(lambda: count("SUCCEEDED") >= JOBS, timeout_s=LEAD_MS / 1000 + 60,
                 interval_s=0.5, what="every job ended")  # fmt: skip
    finally:
        stack.stop()
        events.close()

    ids = {job.data["job_id"] for job in jobs}
    ended = {r["job_id"] for r in events.records if r["kind"] == "SUCCEEDED"}
    assert ended == ids, f"{len(ids - ended)} jobs never ended"
    starts = sorted(r["at_ms"] - due for r in events.records if r["kind"] == "STARTED")
    assert len(starts) == JOBS, "a job started twice"
    assert starts[0] >= 0, "a job started before its due time"
    early = [(k, at) for k, at in enumerate(starts) if at < (k - BURST) * 1000 // RATE]
    assert not early, f"started before (k - burst) / rate: {early[:5]}"
    fired = [r for r in events.records if r["kind"] == "FIRED"]
    assert sum(1 for r in fired if r["throttled_ms"]) >= JOBS - BURST
    print(f"500 jobs at {RATE}/s: first start {starts[0]} ms, last {starts[-1]} ms after due")
    assert 9_000 <= starts[-1] <= 11_000, f"the last job started {starts[-1]} ms after due"
