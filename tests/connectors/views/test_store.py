"""The view store on real RocksDB files: folding, every index, pagination, retention."""

from __future__ import annotations

from pathlib import Path
from unittest.mock import ANY

import pytest

from jobstream._connectors.views import (
    SUBMITTED,
    ViewStore,
    commands,
    executions,
    layout,
    list_jobs,
    workers,
)
from jobstream._connectors.views.query import params, result_location, workflow_jobs
from jobstream._pipeline.errors import ValidationError
from jobstream._pipeline.model.params import params_digest
from jobstream._pipeline.model.records import WorkerHeartbeat, WorkerState
from jobstream._pipeline.workflows.commands import expand_workflow, workflow_event
from tests.connectors.views.records import T0, event, fold, status, submitted


def ids(page) -> list[str]:  # type: ignore[no-untyped-def]
    return [doc["job_id"] for doc in page.items]


def test_a_submission_then_its_status_make_one_document(store: ViewStore) -> None:
    job = submitted("acme", at_ms=T0, labels={"team": "red"}, params={"n": 1})
    fold(store, job)
    doc = store.doc(job["job_id"])
    assert doc is not None and doc["state"] == SUBMITTED and doc["labels"] == {"team": "red"}
    assert doc["params_bytes"] == len(b'{"n":1}') and doc["created_at_ms"] == T0
    fold(store, status(job, "QUEUED", at_ms=T0 + 10, attempt=1))
    doc = store.doc(job["job_id"])
    assert doc is not None and (doc["state"], doc["attempt"]) == ("QUEUED", 1)
    # an older status (a replay meets it again) changes nothing
    fold(store, status(job, "SCHEDULED", at_ms=T0 + 5))
    assert store.doc(job["job_id"])["state"] == "QUEUED"  # type: ignore[index]


def test_the_order_of_the_topics_does_not_matter(tmp_path: Path) -> None:
    job = submitted("acme", at_ms=T0, labels={"k": "v"})
    done = status(job, "SUCCEEDED", at_ms=T0 + 50)
    one, two = ViewStore(tmp_path / "a"), ViewStore(tmp_path / "b")
    fold(one, job, done)
    fold(two, done, job)
    assert one.doc(job["job_id"]) == two.doc(job["job_id"])
    assert list(one.scan(b"", b"\xff")) == list(two.scan(b"", b"\xff"))


def test_every_index_answers_newest_first_and_moves_with_the_state(store: ViewStore) -> None:
    a1 = submitted("acme", "data.process", at_ms=T0 + 1, labels={"team": "red"})
    a2 = submitted("acme", "image.render", at_ms=T0 + 2)
    b1 = submitted("bolt", "data.process", at_ms=T0 + 3, labels={"team": "red"})
    fold(store, a1, a2, b1, status(a1, "RUNNING", at_ms=T0 + 9))
    assert ids(list_jobs(store, {"owner": "acme"})) == [a2["job_id"], a1["job_id"]]
    assert ids(list_jobs(store, {"owner": "acme", "state": "RUNNING"})) == [a1["job_id"]]
    assert ids(list_jobs(store, {"owner": "acme", "state": SUBMITTED})) == [a2["job_id"]]
    assert ids(list_jobs(store, {"job_type": "data.process", "state": SUBMITTED})) == [
        b1["job_id"]]  # fmt: skip
    assert ids(list_jobs(store, {"label": "team=red"})) == [b1["job_id"], a1["job_id"]]
    assert ids(list_jobs(store, {"owner": "bolt", "label": "team=red"})) == [b1["job_id"]]
    assert ids(list_jobs(store, {"owner": "acme", "job_type": "image.render"})) == [a2["job_id"]]
    assert len(list_jobs(store, {}).items) == 3
    # filters no index holds together are checked on the documents
    assert ids(list_jobs(store, {"owner": "acme", "state": "RUNNING",
                                 "job_type": "image.render"})) == []  # fmt: skip
    # the old state's entries are gone, not just shadowed
    stale = layout.INDEXES[2].prefix({"owner": "acme", "state": SUBMITTED})
    assert [layout.job_id_of(k) for k, _ in store.scan(stale, layout.upper_bound(stale))] == [
        a2["job_id"]]  # fmt: skip


def test_an_owner_prefix_does_not_match_a_longer_owner(store: ViewStore) -> None:
    fold(store, submitted("acme", at_ms=T0), submitted("acme-corp", at_ms=T0 + 1))
    assert [d["owner"] for d in list_jobs(store, {"owner": "acme"}).items] == ["acme"]


def test_pages_follow_the_cursor_to_the_end_without_repeats(store: ViewStore) -> None:
    jobs = [submitted("acme", at_ms=T0 + i) for i in range(25)]
    fold(store, *jobs, submitted("bolt", at_ms=T0 + 100))
    seen: list[str] = []
    cursor = None
    while True:
        page = list_jobs(store, {"owner": "acme"}, limit=10, cursor=cursor)
        seen += ids(page)
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert seen == [j["job_id"] for j in reversed(jobs)]


def test_a_filtered_page_stops_after_max_scan_and_goes_on(store: ViewStore) -> None:
    jobs = [submitted("acme", at_ms=T0 + i) for i in range(30)]
    fold(store, *jobs, status(jobs[0], "RUNNING", at_ms=T0 + 99))
    # owner + job type + state: the (owner, state) index, the type checked on documents
    first = list_jobs(store, {"owner": "acme", "state": SUBMITTED, "job_type": "x.y"},
                      max_scan=10)  # fmt: skip
    assert first.items == [] and first.next_cursor is not None
    rest = list_jobs(store, {"owner": "acme", "state": SUBMITTED, "job_type": "x.y"},
                     cursor=first.next_cursor, max_scan=100)  # fmt: skip
    assert rest.items == [] and rest.next_cursor is None


def test_a_garbled_cursor_names_the_field(store: ViewStore) -> None:
    with pytest.raises(ValidationError) as caught:
        list_jobs(store, {"owner": "acme"}, cursor="!!not-base64!!")
    assert caught.value.field == "cursor"


def test_executions_are_the_history_of_every_attempt(store: ViewStore) -> None:
    job = submitted("acme", at_ms=T0)
    error = {"attempt": 1, "error_type": "ValueError", "message": "bad", "traceback": "tb",
             "retryable": True, "at_ms": T0 + 30, "worker_id": "w1"}  # fmt: skip
    fold(store, job,
         event(job, "FIRED", at_ms=T0 + 10, scheduled_at_ms=T0, lateness_ms=10),
         event(job, "STARTED", at_ms=T0 + 20, worker_id="w1"),
         event(job, "HEARTBEAT", at_ms=T0 + 25, worker_id="w1"),
         event(job, "FAILED", at_ms=T0 + 30, worker_id="w1", error=error),
         # the retry router names the failed execution and the attempt to come
         event(job, "RETRY_SCHEDULED", at_ms=T0 + 31, attempt=2,
               execution_id=f"{job['job_id']}:{T0}:1"),
         event(job, "FIRED", at_ms=T0 + 110, attempt=2, due_ms=T0 + 100),
         event(job, "STARTED", at_ms=T0 + 120, attempt=2, due_ms=T0 + 100, worker_id="w2"),
         event(job, "SUCCEEDED", at_ms=T0 + 130, attempt=2, due_ms=T0 + 100, worker_id="w2",
               result='{"rows": 3}'))  # fmt: skip
    runs = executions(store, job["job_id"])
    assert [(r["attempt"], r["worker_id"], r["outcome"]) for r in runs] == [
        (1, "w1", "FAILED"), (2, "w2", "SUCCEEDED")]  # fmt: skip
    assert runs[0]["error"]["error_type"] == "ValueError"
    assert runs[0]["last_heartbeat_ms"] == T0 + 25
    assert (runs[0]["started_at_ms"], runs[0]["ended_at_ms"], runs[0]["lateness_ms"]) == (
        T0 + 20, T0 + 30, 10)  # fmt: skip
    assert runs[1]["result"] == '{"rows": 3}'


def test_ended_jobs_leave_after_the_retention_with_all_they_hold(store: ViewStore) -> None:
    old, fresh, running = (submitted("acme", at_ms=T0 + i) for i in range(3))
    fold(store, old, fresh, running, event(old, "FIRED", at_ms=T0 + 5),
         status(old, "SUCCEEDED", at_ms=T0 + 10), status(fresh, "CANCELLED", at_ms=T0 + 500),
         status(running, "RUNNING", at_ms=T0 + 10))  # fmt: skip
    batch = store.batch()
    assert batch.purge(before_ms=T0 + 100) == 1
    batch.commit()
    assert store.doc(old["job_id"]) is None and executions(store, old["job_id"]) == []
    assert ids(list_jobs(store, {"owner": "acme"})) == [running["job_id"], fresh["job_id"]]
    everything = [k for k, _ in store.scan(b"", b"\xff")]
    assert not any(old["job_id"].encode() in k for k in everything)


def test_commands_are_kept_beside_the_job_and_leave_with_it(store: ViewStore) -> None:
    job, other = submitted("acme", at_ms=T0), submitted("acme", at_ms=T0 + 1)
    fold(store, job, other, status(job, "SCHEDULED", at_ms=T0 + 2))
    batch = store.batch()
    batch.event(event(job, "PAUSED", at_ms=T0 + 10, requested_by="api:acme", detail="paused",
                      execution_id=None))  # fmt: skip
    batch.event(event(job, "FIRED", at_ms=T0 + 20, requested_by="cli:alice", detail="run now"))
    batch.event(event(other, "FIRED", at_ms=T0 + 20))  # the schedule's: no one asked
    # a page showing the job hears of it though its document did not change
    assert list(batch.updated) == [job["job_id"]]
    batch.commit()
    assert commands(store, job["job_id"]) == [
        {"kind": "PAUSED", "at_ms": T0 + 10, "by": "api:acme", "reason": "paused"},
        {"kind": "FIRED", "at_ms": T0 + 20, "by": "cli:alice", "reason": "run now"},
    ]
    assert commands(store, other["job_id"]) == []
    assert len(executions(store, job["job_id"])) == 1  # the trigger's run is an execution too
    assert "commands" not in store.doc(job["job_id"])  # type: ignore[operator]
    fold(store, status(job, "CANCELLED", at_ms=T0 + 30))
    batch = store.batch()
    assert batch.purge(before_ms=T0 + 100) == 1
    batch.commit()
    assert commands(store, job["job_id"]) == []
    assert not any(job["job_id"].encode() in k for k, _ in store.scan(b"", b"\xff"))


def test_a_workflows_jobs_are_one_prefix_scan_with_their_parents_until_they_leave(
    store: ViewStore,
) -> None:
    steps = [{"name": "a", "job_type": "data.process"},
             {"name": "b", "job_type": "data.process", "depends_on": ["a"]}]  # fmt: skip
    wf = workflow_event("acme", steps, now_ms=T0)
    a, b = [job for _, job in expand_workflow(wf.data, now_ms=T0)]
    other = workflow_event("acme", steps, now_ms=T0)  # another workflow, same step names
    fold(store, a, b, submitted("acme", at_ms=T0),
         *[job for _, job in expand_workflow(other.data, now_ms=T0)])  # fmt: skip
    found = workflow_jobs(store, wf.data["workflow_id"])
    assert [(doc["job_id"], doc["step"], doc["depends_on"]) for doc in sorted(
        found, key=lambda doc: doc["step"])] == [(a["job_id"], "a", []),
                                                 (b["job_id"], "b", [a["job_id"]])]  # fmt: skip
    fold(store, status(a, "SUCCEEDED", at_ms=T0 + 10, workflow_id=wf.data["workflow_id"]))
    assert store.doc(a["job_id"])["depends_on"] == [] and store.doc(b["job_id"])["step"] == "b"
    batch = store.batch()
    assert batch.purge(before_ms=T0 + 100) == 1
    batch.commit()
    assert [doc["job_id"] for doc in workflow_jobs(store, wf.data["workflow_id"])] == [b["job_id"]]
    prefix = layout.workflow_prefix(wf.data["workflow_id"])
    assert [k for k, _ in store.scan(prefix, layout.upper_bound(prefix))] == [
        prefix + b["job_id"].encode()
    ]  # the purged job's entry went with it
    assert len(workflow_jobs(store, other.data["workflow_id"])) == 2


def test_a_job_back_from_an_end_leaves_the_retention_index(store: ViewStore) -> None:
    job = submitted("acme", at_ms=T0)
    fold(store, job, status(job, "DEAD_LETTERED", at_ms=T0 + 10),
         status(job, "FAILED_RETRYING", at_ms=T0 + 20))  # a redrive  # fmt: skip
    batch = store.batch()
    assert batch.purge(before_ms=T0 + 10_000) == 0


def test_workers_show_their_age_and_staleness(store: ViewStore) -> None:
    batch = store.batch()
    beat = {
        "worker_id": "w1",
        "host": "h",
        "pid": 1,
        "job_types": ["data.process"],
        "capacity": 4,
        "running": [],
        "state": "RUNNING",
        "started_at_ms": T0,
        "at_ms": T0,
    }
    batch.worker("w1", WorkerHeartbeat(**beat))
    batch.worker("w2", WorkerHeartbeat(**{**beat, "worker_id": "w2", "at_ms": T0 + 20_000}))
    batch.worker("w3", WorkerHeartbeat(**{**beat, "worker_id": "w3", "at_ms": T0 + 20_000,
                                          "state": WorkerState.STOPPED}))  # fmt: skip
    batch.commit()
    found = {w["worker_id"]: (w["age_ms"], w["stale"])
             for w in workers(store, stale_after_ms=15_000, now_ms=T0 + 21_000)}  # fmt: skip
    assert found == {"w1": (21_000, True), "w2": (1000, False), "w3": (1000, True)}


def test_offsets_are_kept_with_the_data_and_survive_a_reopen(tmp_path: Path) -> None:
    store = ViewStore(tmp_path / "v")
    batch = store.batch()
    job = submitted("acme", at_ms=T0)
    batch.submitted(job)
    batch.offset("p.jobs.intake", 2, 41)
    batch.commit()
    store.close()
    reopened = ViewStore(tmp_path / "v")
    assert reopened.offsets() == {("p.jobs.intake", 2): 41}
    assert reopened.doc(job["job_id"]) is not None
    reopened.close()


def test_a_status_alone_gives_the_job_its_creation_time_labels_and_parameters(
    tmp_path: Path,
) -> None:
    """jobs.intake's retention passed: a view rebuilt from jobs.status still shows them,
    and folding the submission too, in either order, makes the same view."""
    job = submitted("acme", at_ms=T0, labels={"team": "red"}, params={"n": 1})
    text = job["spec"]["params"]
    done = status(job, "SUCCEEDED", at_ms=T0 + 50, created_at_ms=T0 + 1,
                  labels={"team": "red"}, params=text, params_bytes=len(text),
                  params_sha256=params_digest(text.encode()))  # fmt: skip
    alone = ViewStore(tmp_path / "alone")
    fold(alone, done)
    doc = alone.doc(job["job_id"])
    assert doc is not None
    assert (doc["created_at_ms"], doc["labels"], doc["params_bytes"]) == (
        T0 + 1, {"team": "red"}, len(text))  # fmt: skip
    assert params(alone, job["job_id"]) == text.encode()
    assert ids(list_jobs(alone, {"label": "team=red"})) == [job["job_id"]]
    both = ViewStore(tmp_path / "both")
    fold(both, done, job)
    assert both.doc(job["job_id"]) == {**doc, "submitted": True, "created_at_ms": T0,
                                       "idempotency_key": None, "schedule": ANY}  # fmt: skip
    alone.close()
    both.close()


def test_where_results_are_is_kept_per_job_and_per_run_and_leaves_with_the_job(
    store: ViewStore,
) -> None:
    job, other = submitted("acme", at_ms=T0), submitted("acme", at_ms=T0 + 1)
    first, second = f"{job['job_id']}:{T0}:1", f"{job['job_id']}:{T0 + 60_000}:1"
    fold(store, job, other, status(job, "SCHEDULED", at_ms=T0 + 2))
    batch = store.batch()
    batch.result(job["job_id"], first, (2, 10))
    batch.result(job["job_id"], second, (2, 17))  # the schedule's next run
    batch.result(other["job_id"], None, (0, 3))  # written by another client: no run named
    batch.commit()
    assert result_location(store, job["job_id"]) == (2, 17), "the latest"
    assert result_location(store, job["job_id"], first) == (2, 10)
    assert result_location(store, job["job_id"], second) == (2, 17)
    assert result_location(store, job["job_id"], f"{job['job_id']}:{T0}:2") is None
    assert result_location(store, other["job_id"]) == (0, 3)
    assert result_location(store, "01JNOSUCHJOB0000000000000") is None
    fold(store, status(job, "SUCCEEDED", at_ms=T0 + 30))
    batch = store.batch()
    assert batch.purge(before_ms=T0 + 100) == 1
    batch.commit()
    assert result_location(store, job["job_id"]) is None
    assert result_location(store, job["job_id"], first) is None
    assert not any(job["job_id"].encode() in k for k, _ in store.scan(b"", b"\xff"))
    assert result_location(store, other["job_id"]) == (0, 3)
