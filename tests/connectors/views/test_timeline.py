"""A job's event timeline, the schedules listing and the jobs list's time range, folded
into real RocksDB files (and the timeline's fold alone, a pure function)."""

from __future__ import annotations

import random
from typing import Any

import msgspec
import pytest

from jobstream._connectors.views import ViewStore, layout, list_jobs, timeline
from jobstream._connectors.views.query import timeline as stored_timeline
from jobstream._connectors.views.schedules import list_schedules, next_runs, workflow_runs
from jobstream._pipeline.errors import ValidationError
from jobstream._pipeline.model.records import WorkflowCancelled, WorkflowSubmitted
from jobstream._pipeline.workflows.commands import expand_workflow, workflow_event
from jobstream._pipeline.workflows.runs import RUN_LABEL
from tests.connectors.views.records import event, fold, status, submitted

T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z


def replay(events: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    held: list[dict[str, Any]] | None = None
    for one in events:
        held = timeline.apply_event(held, one) or held
    return held


def a_run(job: dict[str, Any]) -> list[dict[str, Any]]:
    """A run scheduled at T0 + 1000: fired 40 ms late, started 90 ms late, three heartbeats,
    failed; a retry; the second attempt, claimed 10 ms late, its handler begun 25 ms late
    (its SUCCEEDED tells), succeeded."""
    fire = T0 + 1000
    return [
        event(job, "FIRED", at_ms=fire + 40, due_ms=fire, scheduled_at_ms=fire, lateness_ms=40),
        event(job, "STARTED", at_ms=fire + 90, due_ms=fire, worker_id="w-1"),
        *(event(job, "HEARTBEAT", at_ms=fire + 100 + i * 500, due_ms=fire, worker_id="w-1")
          for i in range(3)),
        event(job, "FAILED", at_ms=fire + 1700, due_ms=fire, worker_id="w-1",
              error={"attempt": 1, "error_type": "Transient", "message": "try again",
                     "at_ms": fire + 1700}),
        event(job, "RETRY_SCHEDULED", at_ms=fire + 1710, due_ms=fire, attempt=2,
              scheduled_at_ms=fire + 2000),
        event(job, "FIRED", at_ms=fire + 2003, due_ms=fire + 2000, attempt=2,
              scheduled_at_ms=fire + 2000, lateness_ms=3),
        event(job, "STARTED", at_ms=fire + 2010, due_ms=fire + 2000, attempt=2, worker_id="w-2"),
        event(job, "SUCCEEDED", at_ms=fire + 2500, due_ms=fire + 2000, attempt=2,
              worker_id="w-2", launched_at_ms=fire + 2025),
    ]  # fmt: skip


def test_a_run_reads_in_order_with_lateness_and_heartbeats_as_one_entry() -> None:
    job = submitted(at_ms=T0)
    held = replay(a_run(job))
    assert held is not None
    assert [(e["kind"], e["attempt"]) for e in held] == [
        ("FIRED", 1), ("STARTED", 1), ("HEARTBEAT", 1), ("FAILED", 1), ("RETRY_SCHEDULED", 2),
        ("FIRED", 2), ("STARTED", 2), ("SUCCEEDED", 2),
    ]  # fmt: skip
    fired, started, beats, failed, retry = held[:5]
    assert (fired["lateness_ms"], fired["scheduled_at_ms"]) == (40, T0 + 1000)
    assert (started["lateness_ms"], started["worker_id"]) == (90, "w-1")  # from its execution id
    assert (beats["count"], beats["at_ms"], beats["last_at_ms"]) == (3, T0 + 1100, T0 + 2100)
    assert failed["error"] == "Transient: try again"
    assert retry["scheduled_at_ms"] == T0 + 3000
    assert held[6]["lateness_ms"] == 10
    assert (failed["lateness_ms"], "launched_at_ms" in failed) == (None, False), "told none"
    succeeded = held[7]
    assert (succeeded["lateness_ms"], succeeded["launched_at_ms"]) == (25, T0 + 3025)
    assert succeeded["scheduled_at_ms"] == T0 + 3000
    last = timeline.last_runs(held, 5)
    assert [(r["outcome"], r["attempt"], r["worker_id"]) for r in last] == [
        ("SUCCEEDED", 2, "w-2"), ("FAILED", 1, "w-1")]


def test_any_order_and_a_replay_fold_into_the_same_timeline() -> None:
    job = submitted(at_ms=T0)
    events = a_run(job)
    once = replay(events)
    shuffled = events[:]
    random.Random(7).shuffle(shuffled)
    assert replay(shuffled) == once
    assert replay(events + events) == once  # a heartbeat folded twice counts once
    assert timeline.apply_event(once, events[3]) is None


def test_a_long_job_keeps_the_latest_entries_and_one_heartbeat_entry_per_run() -> None:
    job = submitted(at_ms=T0)
    events = []
    for run in range(150):  # a recurring job: 150 firings of 3 events and 50 heartbeats each
        fire = T0 + run * 60_000
        events += [event(job, "FIRED", at_ms=fire + 5, due_ms=fire, scheduled_at_ms=fire),
                   event(job, "STARTED", at_ms=fire + 9, due_ms=fire)]  # fmt: skip
        events += [event(job, "HEARTBEAT", at_ms=fire + 10 + i, due_ms=fire) for i in range(50)]
        events.append(event(job, "SUCCEEDED", at_ms=fire + 100, due_ms=fire))
    held = replay(events)
    assert held is not None and len(held) == timeline.EVENTS_KEPT
    assert held[-1]["kind"] == "SUCCEEDED" and held[-1]["at_ms"] == T0 + 149 * 60_000 + 100
    beats = [e for e in held if e["kind"] == "HEARTBEAT"]
    assert all(e["count"] == 50 for e in beats) and len(beats) == 50


def test_the_store_keeps_the_timeline_beside_the_job_and_purges_it_with_the_job(
    store: ViewStore,
) -> None:
    job = submitted(at_ms=T0)
    fold(store, job, *a_run(job), status(job, "SUCCEEDED", at_ms=T0 + 4000))
    kinds = [e["kind"] for e in stored_timeline(store, job["job_id"])]
    assert kinds[0] == "FIRED" and kinds[-1] == "SUCCEEDED" and len(kinds) == 8
    batch = store.batch()
    assert batch.purge(before_ms=T0 + 10_000) == 1
    batch.commit()
    assert stored_timeline(store, job["job_id"]) == []


def test_recurring_jobs_are_listed_until_they_end_one_owner_or_all(store: ViewStore) -> None:
    daily = submitted("acme", at_ms=T0, cron={"expression": "0 9 * * *",
                                              "timezone": "Europe/Paris"})  # fmt: skip
    hourly = submitted("acme", at_ms=T0 + 1, cron="0 * * * *")
    bolts = submitted("bolt", at_ms=T0 + 2, cron="*/5 * * * *")
    one_off = submitted("acme", at_ms=T0 + 3)
    fold(store, daily, hourly, bolts, one_off)
    acme = list_schedules(store, "acme")
    assert [(s.kind, s.held["job_id"]) for s in acme.items] == [
        ("job", hourly["job_id"]), ("job", daily["job_id"])]
    assert acme.next_cursor is None
    everyone = list_schedules(store, None)
    assert [s.owner for s in everyone.items] == ["acme", "acme", "bolt"]
    first = list_schedules(store, None, limit=2)
    rest = list_schedules(store, None, limit=2, cursor=first.next_cursor)
    assert [s.held["job_id"] for s in first.items + rest.items] == [
        s.held["job_id"] for s in everyone.items]
    fold(store, status(hourly, "PAUSED", at_ms=T0 + 10), status(daily, "CANCELLED", at_ms=T0 + 10))
    assert [(s.held["job_id"], s.held["state"]) for s in list_schedules(store, "acme").items] == [
        (hourly["job_id"], "PAUSED")]
    with pytest.raises(ValidationError) as refused:
        list_schedules(store, "acme", cursor="not a cursor")
    assert refused.value.field == "cursor"


def test_a_recurring_workflow_is_a_schedule_not_jobs_until_its_cancel(store: ViewStore) -> None:
    steps = [{"name": "extract", "job_type": "data.process"},
             {"name": "load", "job_type": "data.process", "depends_on": ["extract"]}]
    template = workflow_event("acme", steps, now_ms=T0, schedule="0 3 * * *")
    typed_template = msgspec.convert(template.data, WorkflowSubmitted, from_attributes=True)
    batch = store.batch()
    batch.workflow_schedule(typed_template)
    batch.commit()
    assert list_jobs(store, {"owner": "acme"}).items == []
    (listed,) = list_schedules(store, "acme").items
    assert listed.kind == "workflow" and listed.held["cron"]["expression"] == "0 3 * * *"
    assert [s["name"] for s in listed.held["steps"]] == ["extract", "load"]
    # a run: a workflow of its own whose steps carry the schedule's label
    run = workflow_event("acme", [{**s, "labels": {RUN_LABEL: template.data["workflow_id"]}}
                                  for s in steps], now_ms=T0 + 10_800_000,
                         workflow_id="R-run-1")  # fmt: skip
    jobs = [job for _, job in expand_workflow(run.data, now_ms=T0 + 10_800_000)]
    fold(store, *jobs, *(status(job, "SUCCEEDED", at_ms=T0 + 10_900_000) for job in jobs))
    (done,) = workflow_runs(store, "acme", template.data["workflow_id"])
    assert (done["run_id"], done["outcome"], done["steps"]) == ("R-run-1", "SUCCEEDED", 2)
    batch = store.batch()
    batch.workflow_cancelled(WorkflowCancelled(workflow_id=template.data["workflow_id"],
                                               owner="acme", requested_at_ms=T0 + 20))
    batch.workflow_schedule(typed_template)  # submitted again: still cancelled
    batch.commit()
    assert list_schedules(store, "acme").items == []


def test_next_runs_follow_the_zone_and_stop_at_max_runs() -> None:
    cron = {"expression": "0 9 * * *", "timezone": "Europe/Paris"}
    assert next_runs(cron, after_ms=T0, schedule_id="x", count=3) == [
        T0 + 8 * 3_600_000 + day * 86_400_000 for day in range(3)]  # 09:00 CET is 08:00 UTC
    assert len(next_runs({**cron, "max_runs": 4}, after_ms=T0, schedule_id="x", runs=2)) == 2


def test_a_time_range_bounds_the_scan_of_any_index(store: ViewStore) -> None:
    jobs = [submitted("acme", at_ms=T0 + i * 1000) for i in range(6)]
    fold(store, *jobs)
    ranged = list_jobs(store, {"owner": "acme"}, since_ms=T0 + 1000, until_ms=T0 + 4000)
    assert [d["job_id"] for d in ranged.items] == [j["job_id"] for j in jobs[3:0:-1]]
    first = list_jobs(store, {}, since_ms=T0 + 2000, limit=2)
    rest = list_jobs(store, {}, since_ms=T0 + 2000, limit=2, cursor=first.next_cursor)
    assert [d["job_id"] for d in first.items + rest.items] == [
        j["job_id"] for j in jobs[:1:-1]]
    assert list_jobs(store, {"owner": "acme"}, until_ms=T0).items == []
    assert layout.created_part(T0) < layout.created_part(T0 - 1)  # newest first
