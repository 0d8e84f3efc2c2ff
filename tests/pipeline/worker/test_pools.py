"""Worker pools on the real broker: a job that requires a pool runs only on that pool's
workers, and a pool's workers run nothing else."""

from __future__ import annotations

from pathlib import Path

from jobstream._pipeline.model.records import Event, JobSubmitted, evolve, typed
from jobstream._pipeline.timers.processor import TIMER_OPTIONS, timer_runner
from jobstream._pipeline.topics import Topics
from jobstream._pipeline.worker import JobContext, WorkerApp
from tests.pipeline.worker.support import EventLog, StartWorker
from tests.support.jobs import submitted
from tests.support.pipeline import in_thread, produce
from tests.support.waiting import wait_for

app = WorkerApp()


@app.handler("data.process")
def no_op(ctx: JobContext) -> None:
    return None


def in_pool(job: Event, pool: str) -> Event:
    record = typed("JobSubmitted", job.data)
    assert isinstance(record, JobSubmitted)
    return Event.of(evolve(record, spec=evolve(record.spec, pool=pool)))


def test_a_gpu_job_never_runs_on_a_worker_outside_the_gpu_pool(
    topics: Topics, start_worker: StartWorker, events: EventLog, tmp_path: Path
) -> None:
    gpu_jobs = [in_pool(submitted(owner="tests"), "gpu") for _ in range(20)]
    plain_jobs = [submitted(owner="tests") for _ in range(20)]
    # Two plain workers and one in the pool: most of the plain capacity, were routing by
    # type alone, would take gpu jobs.
    start_worker(app, worker_id="plain-1")
    start_worker(app, worker_id="plain-2")
    start_worker(app, worker_id="gpu-1", pool="gpu")
    options = TIMER_OPTIONS.evolve(instance_id="a", state_dir=tmp_path / "state")
    with in_thread(timer_runner(topics.settings, options)):
        produce(topics.settings, topics.intake, [*gpu_jobs, *plain_jobs])

        def started() -> list[dict]:
            records = [r for r in events.poll() if r["kind"] == "SUCCEEDED"]
            return records if len(records) >= 40 else []

        wait_for(started, timeout_s=120, interval_s=0.5, what="every job to succeed")
    ran_on = {r["job_id"]: r["worker_id"] for r in events.records if r["kind"] == "STARTED"}
    gpu_ids = {job.data["job_id"] for job in gpu_jobs}
    assert {ran_on[job_id] for job_id in gpu_ids} == {"gpu-1"}
    assert {w for job_id, w in ran_on.items() if job_id not in gpu_ids} <= {"plain-1", "plain-2"}
    assert len(ran_on) == 40
