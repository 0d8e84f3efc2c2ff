"""A recurring workflow's status: the events its timers send, folded by the state machine.

The timers run on a real store (the runtime's driver); every event they send of the
workflow's status goes through :func:`transition` in order, as the status processor reads
them from jobs.events, and each must apply.
"""

from __future__ import annotations

from pathlib import Path

import orjson

from jobstream._pipeline.config import Settings
from jobstream._pipeline.model.lifecycle import SCHEDULE_JOB_TYPE, JobState
from jobstream._pipeline.model.records import JobLifecycle
from jobstream._pipeline.runtime import Output
from jobstream._pipeline.runtime.driver import ProcessorDriver
from jobstream._pipeline.serde import Event
from jobstream._pipeline.status.machine import Verdict, transition
from jobstream._pipeline.status.state import JobRecord
from jobstream._pipeline.timers.processor import TimerProcessor
from jobstream._pipeline.topics import Topics
from jobstream._pipeline.workflows.commands import step_ids, workflow_event
from jobstream._pipeline.workflows.ids import schedule_job_id
from jobstream._pipeline.workflows.schedule_commands import (
    pause_workflow_event,
    resume_workflow_event,
)
from tests.support.workflows import step, step_ended

SETTINGS = Settings(fire_lead=0)
TOPICS = Topics(SETTINGS)
T0 = 1_798_000_000_000
MINUTE = 60_000
FIRST = (T0 // MINUTE + 1) * MINUTE
OWNER, SCHEDULE = "tests", "hourly"


def fold(record: JobRecord | None, outputs: list[Output]) -> JobRecord | None:
    for output in outputs:
        if output.topic != TOPICS.events:
            continue
        event: JobLifecycle = output.value.data
        decision = transition(record, event)
        assert decision.verdict is Verdict.APPLIED, decision.reason
        record = decision.record
    return record


def test_the_status_follows_the_schedule_its_commands_and_its_runs(tmp_path: Path) -> None:
    timers = ProcessorDriver(TimerProcessor(SETTINGS), tmp_path, now_ms=T0)
    try:
        intake = TOPICS.intake
        key = SCHEDULE.encode()
        record = fold(
            None,
            timers.pipe(
                intake,
                workflow_event(
                    OWNER, [step("a")], now_ms=T0, workflow_id=SCHEDULE, schedule="* * * * *"
                ),
            ),
        )
        assert record is not None
        assert (record.job_id, record.job_type) == (schedule_job_id(OWNER, SCHEDULE),
                                                    SCHEDULE_JOB_TYPE)  # fmt: skip
        assert (record.state, record.next_fire_at_ms, record.runs) == (JobState.SCHEDULED,
                                                                       FIRST, 0)  # fmt: skip

        fired = timers.advance(FIRST - T0)
        record = fold(record, fired)
        assert record is not None and record.next_fire_at_ms == FIRST + MINUTE
        [run] = [o.value.data for o in fired if o.topic == intake]
        record = fold(
            record,
            timers.pipe(
                intake,
                pause_workflow_event(OWNER, SCHEDULE, now_ms=T0, requested_by="cli:ann"),
                key=key,
            ),
        )
        assert record is not None and record.state is JobState.PAUSED

        timers.pipe(intake, Event("WorkflowSubmitted", run), key=run["workflow_id"].encode())
        [job_id] = step_ids(Event("WorkflowSubmitted", run)).values()
        [end] = [o for o in timers.pipe(intake, step_ended(job_id, run["workflow_id"],
                                                           "DEAD_LETTERED", timers.now_ms))
                 if o.topic == intake]  # fmt: skip
        record = fold(record, timers.pipe(intake, end.value, key=end.key))
        assert record is not None
        assert (record.state, record.runs) == (JobState.PAUSED, 1), "ended while paused"
        assert orjson.loads(record.result or "") == {"run_id": run["workflow_id"],
                                                     "outcome": "DEAD_LETTERED"}  # fmt: skip

        timers.advance(5 * MINUTE)
        record = fold(
            record, timers.pipe(intake, resume_workflow_event(OWNER, SCHEDULE, now_ms=T0), key=key)
        )
        assert record is not None
        assert (record.state, record.next_fire_at_ms) == (JobState.SCHEDULED,
                                                          FIRST + 6 * MINUTE)  # fmt: skip
        cancel = Event(
            "WorkflowCancelled",
            {"workflow_id": SCHEDULE, "owner": OWNER, "requested_at_ms": T0, "reason": "done"},
        )
        record = fold(record, timers.pipe(intake, cancel))
        assert record is not None and record.state is JobState.CANCELLED
        assert record.cancellation is not None and record.cancellation.reason == "done"
    finally:
        timers.close()


def test_a_job_of_the_reserved_type_carries_no_run() -> None:
    """A run's end counts only on a recurring workflow's status: a job's SCHEDULED never
    carries a result, and one that did would change no run count."""
    job = JobRecord(job_id="01JD3W6Q8Z5X7M2K4N9P0R1S2T", state=JobState.SCHEDULED,
                    job_type="data.process", owner="tests")  # fmt: skip
    event = JobLifecycle(kind="SCHEDULED", job_id=job.job_id, at_ms=T0, result='{"x": 1}')
    decision = transition(job, event)
    assert decision.record is not None and (decision.record.runs, decision.record.result) == (
        0,
        None,
    )
