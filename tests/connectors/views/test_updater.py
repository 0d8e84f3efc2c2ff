"""The view updater against the broker: it folds the four topics, resumes from the offsets
in its files after a restart, and a rebuild from offset zero equals the live views."""

from __future__ import annotations

from pathlib import Path

from jobstream._connectors.views import (
    SUBMITTED,
    ViewStore,
    ViewUpdater,
    executions,
    list_jobs,
    workers,
)
from jobstream._pipeline.config import Settings
from jobstream._pipeline.jobs import JobClient, JobRequest
from jobstream._pipeline.kafka import clients
from jobstream._pipeline.serde import Event, encode_status
from jobstream._pipeline.topics import Topics
from tests.connectors.views.records import as_submitted, event, status
from tests.support.pipeline import SERIALIZE
from tests.support.waiting import wait_for

DAY_MS = 86_400_000


def _produce_rest(settings: Settings, topics: Topics, fields: dict) -> None:
    record = as_submitted(fields)
    producer = clients.producer(settings)
    job_id, at = record.job_id, record.submitted_at_ms
    producer.produce(topics.status, encode_status(status(record, "RUNNING", at_ms=at + 5,
                                                         attempt=1)), job_id.encode())  # fmt: skip
    for kind, dt in (("FIRED", 1), ("STARTED", 2)):
        step = Event("JobLifecycle", event(record, kind, at_ms=at + dt, worker_id="w-1"))
        producer.produce(topics.events, SERIALIZE(step), job_id.encode())
    beat = Event("WorkerHeartbeat", {
        "worker_id": "w-1", "host": "h", "pid": 7, "job_types": ["data.process"],
        "capacity": 2, "running": [], "state": "RUNNING", "started_at_ms": at, "at_ms": at,
    })  # fmt: skip
    producer.produce(topics.workers, SERIALIZE(beat), b"w-1")
    producer.produce(topics.intake, b"not avro", b"x")  # skipped and counted, never fatal
    assert producer.flush(30) == 0


def _contents(store: ViewStore) -> list[tuple[bytes, bytes]]:
    return [(k, v) for k, v in store.scan(b"", b"\xff") if not k.startswith(b"\x01")]


def test_views_follow_the_topics_resume_and_rebuild(
    settings: Settings, topics: Topics, tmp_path: Path
) -> None:
    with JobClient(settings) as client:
        ids = client.submit_many(
            JobRequest(job_type="data.process", owner=owner, labels={"n": str(i)})
            for i, owner in enumerate(["acme", "acme", "bolt"])
        )
    store = ViewStore(tmp_path / "views")
    updater = ViewUpdater(settings, store, retention_ms=DAY_MS)
    updater.open()
    wait_for(lambda: updater.step() >= 0 and len(list_jobs(store, {}).items) == 3, what="3 jobs")
    first = store.doc(ids[0])
    assert first is not None
    _produce_rest(
        settings,
        topics,
        {
            "job_id": ids[0],
            "submitted_at_ms": first["created_at_ms"],
            "spec": {"job_type": "data.process", "owner": "acme"},
        },
    )

    def folded() -> bool:
        updater.step()
        runs = executions(store, ids[0])
        return (
            bool(runs)
            and runs[0]["outcome"] == "RUNNING"
            and bool(workers(store, stale_after_ms=DAY_MS))
        )

    wait_for(folded, what="status, events and heartbeat folded")
    wait_for(lambda: updater.step() >= 0 and updater.stats.skipped == 1, what="bad record skipped")
    assert [d["job_id"] for d in list_jobs(store, {"owner": "acme", "state": "RUNNING"}).items] \
        == [ids[0]]  # fmt: skip
    assert [d["state"] for d in list_jobs(store, {"owner": "bolt"}).items] == [SUBMITTED]
    assert executions(store, ids[0])[0]["worker_id"] == "w-1"
    live = _contents(store)
    updater.close()
    store.close()

    # a restart resumes from the offsets in the files: nothing is read twice
    store = ViewStore(tmp_path / "views")
    again = ViewUpdater(settings, store, retention_ms=DAY_MS)
    again.open()
    assert again.caught_up()
    assert again.step(timeout_s=1.0) == 0 and _contents(store) == live

    # a rebuild from offset zero folds every record again into the same views
    seen: list[tuple[int, int]] = []
    total = again.rebuild(progress=lambda done, of: seen.append((done, of)))
    assert total >= 3 + 5 and seen and seen[-1][0] == seen[-1][1]
    assert _contents(store) == live
    again.close()
    store.close()
