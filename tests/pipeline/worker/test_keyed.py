"""Concurrency keys at a worker: runs counted per key, records parked behind a key at its
limit in order, other keys never held back, parked offsets never committed, one HELD each
(pipeline/worker/keyed.py; docs/adr/0008-concurrency-keys.md)."""

from __future__ import annotations

import threading
from typing import Any

from jobstream._pipeline.model.cancel import CancelRequest
from jobstream._pipeline.model.records import JobKeys, evolve
from jobstream._pipeline.serde import Event
from jobstream._pipeline.worker import JobContext, WorkerApp
from jobstream._pipeline.worker.keyed import (
    PARKED_MOST,
    ConcurrencyKey,
    KeyedRuns,
    ParkedRecords,
)
from tests.pipeline.worker.executions import execution_requested
from tests.pipeline.worker.support import DriveWorker

A = ConcurrencyKey("tests\x00a", "a", 2)
B = ConcurrencyKey("tests\x00b", "b", 1)
P0, P1 = ("jobs.exec.t.normal", 0), ("jobs.exec.t.normal", 1)


def test_a_key_at_its_limit_parks_its_records_in_order_and_others_pass() -> None:
    runs = KeyedRuns()
    parked: ParkedRecords[str] = ParkedRecords(runs)
    assert parked.admit(A, P0, "a1", 10)
    runs.take(A, "a1")
    assert parked.admit(A, P0, "a2", 10)
    runs.take(A, "a2")
    assert not parked.admit(A, P0, "a3", 10)
    assert not parked.admit(A, P0, "a4", 10)
    assert parked.admit(B, P0, "b1", 10), "another key on the same partition is not held back"
    assert [(h.record, h.key.held_by, h.waiting_for) for h in parked.take_held()] == [
        ("a3", "concurrency:a", ["a1", "a2"]),
        ("a4", "concurrency:a", ["a1", "a2"]),
    ]
    assert parked.take_held() == [] and len(parked) == 2 and parked.parked(P0) == 2
    assert parked.pop_ready() is None, "no run of the key has ended"
    runs.give(A, "a1")
    assert parked.pop_ready() == "a3"
    runs.take(A, "a3")
    assert parked.pop_ready() is None
    runs.give(A, "a2")
    runs.give(A, "a3")
    assert parked.pop_ready() == "a4" and not parked


def test_a_new_record_of_a_key_with_parked_ones_goes_behind_them() -> None:
    runs = KeyedRuns()
    parked: ParkedRecords[str] = ParkedRecords(runs)
    runs.take(B, "b0")
    assert not parked.admit(B, P0, "b1", 1)
    runs.give(B, "b0")  # room now, but b1 is first in line
    assert not parked.admit(B, P0, "b2", 1)
    assert parked.pop_ready() == "b1"
    runs.take(B, "b1")
    assert parked.pop_ready() is None
    runs.give(B, "b1")
    assert parked.pop_ready() == "b2"


def test_a_slot_of_a_type_wide_limit_is_needed_too() -> None:
    runs = KeyedRuns()
    parked: ParkedRecords[str] = ParkedRecords(runs)
    runs.take(B, "b0")
    parked.admit(B, P1, "b1", 1)
    runs.give(B, "b0")
    assert not parked.has_ready(lambda partition: partition != P1)
    assert parked.pop_ready(lambda partition: partition != P1) is None
    assert parked.has_ready() and parked.pop_ready(lambda partition: True) == "b1"


def test_revoked_partitions_drop_their_parked_records() -> None:
    runs = KeyedRuns()
    parked: ParkedRecords[str] = ParkedRecords(runs)
    runs.take(B, "b0")
    parked.admit(B, P0, "b1", 1)
    parked.admit(B, P1, "b2", 1)
    parked.forget([P0])
    assert len(parked) == 1 and parked.parked(P0) == 0
    runs.give(B, "b0")
    assert parked.pop_ready() == "b2"


def test_a_partition_past_its_share_of_parked_records_is_paused_until_half() -> None:
    runs = KeyedRuns()
    parked: ParkedRecords[int] = ParkedRecords(runs)
    runs.take(B, "b0")
    share = PARKED_MOST // 4
    for i in range(share):
        parked.admit(B, P0, i, 1)
    assert parked.crowded(4, frozenset()) == {P0}
    runs.give(B, "b0")
    for _ in range(share // 3):
        parked.pop_ready()  # each ends at once in this test
        runs.take(B, "x")
        runs.give(B, "x")
    assert parked.crowded(4, frozenset()) == set()
    assert parked.crowded(4, frozenset({P0})) == {P0}, "paused until down to half its share"


def test_the_counts_are_by_job_and_a_key_with_none_left_goes() -> None:
    runs = KeyedRuns()
    runs.take(A, "j1")
    runs.take(A, "j1")  # a redelivery racing a claim: two runs of one job
    assert runs.running(A) == ["j1", "j1"] and not runs.room(A) and len(runs) == 2
    runs.give(A, "j1")
    runs.give(A, "j1")
    runs.give(A, "j1")  # one too many: ignored
    assert runs.room(A) and len(runs) == 0


# -- on the worker driver (no broker) ---------------------------------------------------


def keyed(key: str, limit: int, **fields: Any) -> Event:
    event = execution_requested(**fields)
    spec = evolve(event.data.spec, job_keys=JobKeys(concurrency_key=key, concurrency_limit=limit))
    return Event(event.name, evolve(event.data, spec=spec))


def test_the_worker_runs_a_key_at_its_limit_and_the_others_beside_it(
    drive: DriveWorker, gate: threading.Event
) -> None:
    app = WorkerApp()
    running: list[str] = []
    order: list[str] = []
    most: dict[str, int] = {}
    lock = threading.Lock()

    @app.handler("data.process")
    def work(ctx: JobContext) -> None:
        key = ctx.params["key"]
        with lock:
            running.append(key)
            order.append(ctx.execution_id)
            most[key] = max(most.get(key, 0), running.count(key))
        if key == "hot":
            gate.wait(60)
        with lock:
            running.remove(key)

    driver = drive(app, concurrency=8)
    hot = driver.fire(*(keyed("hot", 2, params={"key": "hot"}) for _ in range(6)), partition=0)
    cold = driver.fire(*(keyed("cold", 1, params={"key": "cold"}) for _ in range(3)), partition=0)
    driver.run_until(lambda: all(driver.events(e, "SUCCEEDED") for e in cold),
                     what="the other key's runs, behind the hot key's")  # fmt: skip
    assert most == {"hot": 2, "cold": 1}
    held = [h for h in driver.events(kind="HELD") if h["execution_id"] in hot]
    assert sorted(h["execution_id"] for h in held) == sorted(hot[2:]), "one HELD each"
    assert {h["held_by"] for h in held} == {"concurrency:hot"}
    started = {e["job_id"] for e in driver.events(kind="STARTED") if e["execution_id"] in hot}
    assert all(set(h["waiting_for"]) == started and len(h["waiting_for"]) == 2 for h in held)
    assert _watermark(driver) <= 2, "not committed past the parked records"
    gate.set()
    driver.run_until(lambda: all(driver.events(e, "SUCCEEDED") for e in hot), what="hot runs")
    assert most == {"hot": 2, "cold": 1}
    assert [e for e in order if e in hot][2:] == hot[2:], "parked records start in order"
    assert len([h for h in driver.events(kind="HELD") if h["execution_id"] in hot]) == 4
    driver.step()
    assert _watermark(driver) == 9


def _watermark(driver: Any) -> int:
    return max((tp.offset for held in driver.broker.committed.values() for tp in held.values()
                if tp.partition == 0), default=0)  # fmt: skip


def test_a_parked_record_whose_job_is_cancelled_ends_at_once(
    drive: DriveWorker, gate: threading.Event
) -> None:
    app = WorkerApp()

    @app.handler("data.process")
    def work(ctx: JobContext) -> None:
        gate.wait(60)

    driver = drive(app, concurrency=4)
    first, parked = driver.fire(*(keyed("hot", 1) for _ in range(2)), partition=0)
    driver.run_until(lambda: driver.events(parked, "HELD"), what="the second one parked")
    job = next(e for e in driver.events(kind="HELD") if e["execution_id"] == parked)
    driver.cancel(CancelRequest(job_id=job["job_id"], requested_at_ms=driver.clock.now_ms,
                                requested_by="tests", reason="not needed"))  # fmt: skip
    driver.run_until(lambda: driver.events(parked, "CANCELLED"),
                     what="the parked one cancelled while its key's run goes on")  # fmt: skip
    assert not driver.events(first, "SUCCEEDED"), "before the key's run ended"
    gate.set()
    driver.run_until(lambda: driver.events(first, "SUCCEEDED"), what="the key's run")
    assert not driver.events(parked, "STARTED")
