"""Timer entries: each kind decodes to its type, and entries written before the kinds had
types (``job`` a plain JSON object, encoded by orjson from a dataclass) still load."""

from __future__ import annotations

import orjson

from jobstream._pipeline.model.records import (
    CronSchedule,
    ErrorInfo,
    JobSubmitted,
    Priority,
    WorkflowSubmitted,
)
from jobstream._pipeline.scheduling.cron import OverlapPolicy
from jobstream._pipeline.timers.entry import (
    JobEntry,
    Marker,
    MarkerEntry,
    RetryEntry,
    ScheduleEntry,
    TimerEntry,
)

SPEC = (
    '{"job_type":"data.process","owner":"acme","params":"{\\"n\\":1}","priority":"HIGH",'
    '"run_at_ms":null,"cron":null,"depends_on":[],"retry":null,"timeout_ms":null,'
    '"labels":{"team":"x"},"on_parent_failure":"CANCEL","pool":null}'
)
REST = '"paused":false,"blocked":false'

# As the timers wrote them before: orjson of the entry dataclass, its job a dict.
OLD_JOB = (
    '{"timer_id":"01JOB","kind":"job","job":{"job_id":"01JOB","idempotency_key":null,'
    f'"workflow_id":null,"submitted_at_ms":1798000000000,"spec":{SPEC}}},"due_ms":1798000005000,'
    f'"runs":0,"attempt":1,{REST},"errors":[],"held_by":"type:data.process",'
    '"held_at_ms":1798000005001}'
).encode()
OLD_RETRY = (
    '{"timer_id":"01JOB/retry","kind":"retry","job":{"job_id":"01JOB","workflow_id":null,'
    f'"idempotency_key":null,"submitted_at_ms":1798000009000,"spec":{SPEC}}},'
    f'"due_ms":1798000010000,"runs":0,"attempt":2,{REST},"errors":[{{"attempt":1,'
    '"error_type":"ValueError","message":"bad","traceback":null,"retryable":true,'
    '"at_ms":1798000008000,"worker_id":"w1"}],"held_by":null,"held_at_ms":null}'
).encode()
OLD_MARKER = (
    '{"timer_id":"01JOB","kind":"marker","job":{"job_id":"01JOB","idempotency_key":"k1"},'
    f'"due_ms":1798600000000,"runs":0,"attempt":1,{REST},"errors":[],"held_by":null,'
    '"held_at_ms":null}'
).encode()
OLD_ENDED = (
    '{"timer_id":"E:acme\\u0000wf","kind":"marker","job":{"job_id":"wf","idempotency_key":null,'
    f'"owner":"acme"}},"due_ms":1798600000000,"runs":0,"attempt":1,{REST},"errors":[],'
    '"held_by":null,"held_at_ms":null}'
).encode()
CRON = (
    '{"expression":"0 3 * * *","timezone":"UTC","start_at_ms":null,"end_at_ms":null,'
    '"max_runs":null,"skipped_hour":"RUN_AFTER","repeated_hour":"FIRST","misfire":"RUN_ONCE",'
    '"catchup_window_ms":3600000,"overlap":"SKIP","jitter_ms":0}'
)
STEP = f'{{"name":"a","depends_on":[],"spec":{SPEC}}}'
OLD_SCHEDULE = (
    '{"timer_id":"S:acme\\u0000nightly","kind":"workflow","job":{"job_id":"nightly",'
    '"workflow_id":null,"template":{"workflow_id":"nightly","idempotency_key":null,'
    f'"owner":"acme","submitted_at_ms":1798000000000,"steps":[{STEP}],"schedule":{CRON},'
    '"schedule_id":null},"idempotency_key":null,'
    f'"spec":{{"cron":{CRON},"owner":"acme","job_type":""}}}},"due_ms":1798002000000,'
    f'"runs":3,"attempt":1,{REST},"errors":[],"held_by":null,"held_at_ms":null}}'
).encode()


def test_a_job_entry_of_today_loads_as_its_typed_submission() -> None:
    entry = TimerEntry.decode(OLD_JOB)
    assert isinstance(entry, JobEntry) and entry.kind == "job"
    assert isinstance(entry.job, JobSubmitted)
    assert entry.job_id == "01JOB" and entry.owner == "acme"
    assert entry.spec.priority is Priority.HIGH and entry.spec.labels == {"team": "x"}
    assert (entry.due_ms, entry.held_by, entry.held_at_ms) == (
        1798000005000, "type:data.process", 1798000005001)  # fmt: skip


def test_a_retry_entry_of_today_keeps_its_attempt_and_errors() -> None:
    entry = TimerEntry.decode(OLD_RETRY)
    assert isinstance(entry, RetryEntry) and entry.kind == "retry"
    assert entry.attempt == 2 and entry.job.submitted_at_ms == 1798000009000
    assert entry.errors == [ErrorInfo(attempt=1, error_type="ValueError", message="bad",
                                      at_ms=1798000008000, worker_id="w1")]  # fmt: skip


def test_markers_of_today_load_with_no_owner_to_schedule_by() -> None:
    marker = TimerEntry.decode(OLD_MARKER)
    assert isinstance(marker, MarkerEntry)
    assert marker.job == Marker(job_id="01JOB", idempotency_key="k1") and marker.owner == ""
    ended = TimerEntry.decode(OLD_ENDED)
    assert isinstance(ended, MarkerEntry)
    assert ended.job == Marker(job_id="wf", idempotency_key=None, owner="acme")
    assert ended.timer_id == "E:acme\x00wf" and ended.owner == ""


def test_a_recurring_workflow_of_today_loads_with_its_template() -> None:
    entry = TimerEntry.decode(OLD_SCHEDULE)
    assert isinstance(entry, ScheduleEntry) and entry.kind == "workflow"
    assert entry.job_id == "nightly" and entry.owner == "acme" and entry.runs == 3
    assert isinstance(entry.job.template, WorkflowSubmitted)
    assert [step.name for step in entry.job.template.steps] == ["a"]
    assert isinstance(entry.cron, CronSchedule) and entry.cron.overlap is OverlapPolicy.SKIP


def test_every_kind_reads_back_what_it_writes_under_the_same_field_names() -> None:
    for raw in (OLD_JOB, OLD_RETRY, OLD_MARKER, OLD_ENDED, OLD_SCHEDULE):
        entry = TimerEntry.decode(raw)
        written = entry.encode()
        assert TimerEntry.decode(written) == entry
        assert _beside_new_nulls(orjson.loads(written), orjson.loads(raw)), (
            "the same JSON, field for field (a field added since is null)")


def _beside_new_nulls(written: object, old: object) -> bool:
    """``written`` is ``old`` where ``old`` has a field, and null where only it has one."""
    if isinstance(written, dict) and isinstance(old, dict):
        return all(_beside_new_nulls(value, old[key]) if key in old else value is None
                   for key, value in written.items()) and old.keys() <= written.keys()  # fmt: skip
    if isinstance(written, list) and isinstance(old, list):
        return len(written) == len(old) and all(map(_beside_new_nulls, written, old))
    return written == old
