"""The fault runs' arithmetic: lost jobs, duplicate runs and their flags, stalls."""

from __future__ import annotations

from typing import Any

from jobstream._ops.faults.journal import Run
from jobstream._ops.faults.observer import Seen
from jobstream._ops.faults.tally import longest_stall, poison_tally, run_more_than_once, tally
from jobstream._ops.faults.triggers import SourceFeed, problems, trigger_tally
from jobstream._pipeline.config import load_settings


def seen(kind: str, job: str, at: int, *, seen_ms: int | None = None,
         **fields: Any) -> Seen:  # fmt: skip
    return Seen(at if seen_ms is None else seen_ms,
                {"kind": kind, "job_id": job, "at_ms": at, "attempt": 1, **fields})  # fmt: skip


def run(job: str, execution: str, *, ok: bool = True, worker: str = "w0") -> Run:
    return Run(job, execution, 1, worker, 0, 10, 1, ok)


def test_a_job_without_a_terminal_event_is_lost() -> None:
    events = [seen("STARTED", "a", 1010), seen("SUCCEEDED", "a", 1030),
              seen("STARTED", "b", 2050)]  # fmt: skip
    result = tally({"a": 1000, "b": 2000}, events, [run("a", "x")], fault_ms=None, until_ms=5000)
    assert (result["submitted"], result["ended"], result["lost"]) == (2, 1, 1)
    assert result["ids"]["lost"] == ["b"]
    assert result["start_lateness_ms"]["max"] == 50


def test_a_handler_begun_before_its_instant_by_the_machines_clock_started_early() -> None:
    due = {"early": 10_000, "in-bound": 10_000, "late": 10_000, "unknown": 10_000}
    events = [seen("SUCCEEDED", job, 11_000) for job in due]
    runs = [Run("early", "e1", 1, "w0", 10_000, 10_010, 1, True, machine_start_ms=9_000),
            Run("early", "e2", 2, "w0", 12_000, 12_010, 1, True, machine_start_ms=12_000),
            Run("in-bound", "e1", 1, "w0", 10_000, 10_010, 1, True, machine_start_ms=9_900),
            Run("late", "e1", 1, "w0", 10_000, 10_010, 1, True, machine_start_ms=10_300),
            run("unknown", "e1")]  # fmt: skip
    result = tally(due, events, runs, fault_ms=None, until_ms=20_000)
    assert result["started_early"] == 1 and result["ids"]["started_early"] == ["early"]
    assert result["earliest_start_ms"] == -1_000  # its first run counts, not its retry


def test_two_runs_of_a_job_working_at_once_overlap() -> None:
    def long_run(job: str, execution: str, first: int, last: int) -> Run:
        return Run(job, execution, 1, "w0", first, last, 1, True, machine_start_ms=first,
                   machine_end_ms=last)  # fmt: skip

    due = {"zombie": 0, "stopped-in-time": 0, "once": 0}
    runs = [long_run("zombie", "e1", 1_000, 9_000), long_run("zombie", "e2", 8_000, 14_000),
            long_run("stopped-in-time", "e1", 1_000, 3_000),
            long_run("stopped-in-time", "e2", 8_000, 14_000),
            long_run("once", "e1", 1_000, 7_000), run("once", "e1")]  # fmt: skip
    events = [seen("SUCCEEDED", job, 15_000) for job in due]
    result = tally(due, events, runs, fault_ms=None, until_ms=20_000)
    assert result["overlapping_runs"] == 1
    assert result["ids"]["overlapping_runs"] == ["zombie"]


def test_start_lateness_is_each_runs_launch_when_its_worker_tells_it() -> None:
    """"a": claimed ahead (STARTED at its due instant), its handler begun 120 ms late;
    "b": a run that told no launch, then its retry that did: the earliest run counts,
    by its STARTED."""
    events = [seen("STARTED", "a", 1000, execution_id="a1"),
              seen("HEARTBEAT", "a", 1500, execution_id="a1", launched_at_ms=1120),
              seen("SUCCEEDED", "a", 1600, execution_id="a1", launched_at_ms=1120),
              seen("STARTED", "b", 2010, execution_id="b1"),
              seen("STARTED", "b", 2900, execution_id="b2"),
              seen("SUCCEEDED", "b", 3000, execution_id="b2", launched_at_ms=2950)]  # fmt: skip
    result = tally({"a": 1000, "b": 2000}, events, [], fault_ms=None, until_ms=5000)
    assert (result["start_lateness_ms"]["p50"], result["start_lateness_ms"]["max"]) == (10, 120)


def test_dead_lettered_jobs_have_ended() -> None:
    events = [seen("DEAD_LETTERED", "a", 1500)]
    result = tally({"a": 1000}, events, [], fault_ms=None, until_ms=2000)
    assert (result["ended"], result["dead_lettered"], result["lost"]) == (1, 1, 0)


def test_an_execution_run_twice_or_two_successful_executions_are_duplicates() -> None:
    due = {"redelivered": 0, "zombie": 0, "failed-then-retried": 0, "once": 0}
    runs = [run("redelivered", "e1"), run("redelivered", "e1", worker="w1"),
            run("zombie", "e1"), run("zombie", "e2"),
            run("failed-then-retried", "e1", ok=False), run("failed-then-retried", "e2"),
            run("once", "e1"), run("not-ours", "e1"), run("not-ours", "e1")]  # fmt: skip
    assert run_more_than_once(runs, due) == {"redelivered", "zombie"}


def test_a_duplicate_run_is_unflagged_without_a_duplicate_event() -> None:
    due = {"a": 0, "b": 0}
    events = [seen("SUCCEEDED", "a", 100), seen("SUCCEEDED", "b", 100),
              seen("DUPLICATE", "b", 150, execution_id="e1")]  # fmt: skip
    runs = [run("a", "e1"), run("a", "e1"), run("b", "e1"), run("b", "e1")]
    result = tally(due, events, runs, fault_ms=50, until_ms=200)
    assert (result["run_more_than_once"], result["flagged"]) == (2, 1)
    assert result["unflagged_duplicate_runs"] == 1
    assert result["ids"]["unflagged"] == ["a"]


def test_a_run_declared_lost_and_run_again_as_the_next_attempt_is_flagged() -> None:
    due = {"a": 0, "b": 0}
    events = [seen("LOST", "a", 100, execution_id="e1"), seen("SUCCEEDED", "a", 200),
              seen("SUCCEEDED", "b", 200)]  # fmt: skip
    runs = [run("a", "e1"), run("a", "e2"), run("b", "e1"), run("b", "e2")]
    result = tally(due, events, runs, fault_ms=50, until_ms=300)
    assert (result["run_more_than_once"], result["flagged"], result["lost_leases"]) == (2, 1, 1)
    assert result["ids"]["unflagged"] == ["b"], "b ran twice and nothing said so"


def test_recovery_is_measured_to_the_first_end_seen_after_the_fault() -> None:
    due = {"a": 0, "b": 100, "c": 2000}
    events = [seen("SUCCEEDED", "a", 50), seen("SUCCEEDED", "b", 150, seen_ms=4000),
              seen("SUCCEEDED", "c", 2050, seen_ms=4100)]  # fmt: skip
    result = tally(due, events, [], fault_ms=1000, until_ms=5000)
    assert result["recovery_ms"] == 3000
    assert result["recovery_new_jobs_ms"] == 3100
    # b was pending from its due time (100) until it was seen ending (4000), no end between.
    assert (result["stall_ms"], result["stall_from_fault_ms"]) == (3900, -900)


def test_a_stall_counts_only_while_a_due_job_is_pending() -> None:
    # a ends at 10; nothing is pending until b falls due at 1000; b ends at 1200.
    assert longest_stall({"a": 0, "b": 1000}, {"a": 10, "b": 1200}, 5000) == (200, 1000)


def test_a_stall_still_open_when_observation_stops_runs_to_its_end() -> None:
    assert longest_stall({"a": 0, "b": 100}, {"a": 50}, 3000) == (2900, 100)


def test_a_job_falling_due_as_another_ends_begins_no_new_span() -> None:
    assert longest_stall({"a": 0, "b": 100}, {"a": 100, "b": 150}, 1000) == (100, 0)


def test_poison_jobs_are_counted_by_their_starts_and_how_they_ended() -> None:
    poison, due = {"p1": 0, "p2": 0, "p3": 0}, {"a": 0, "b": 0}
    events = [*(seen("STARTED", "p1", t) for t in (1, 2, 3)), seen("DEAD_LETTERED", "p1", 4),
              *(seen("STARTED", "p2", t) for t in (1, 2)), seen("SUCCEEDED", "p2", 4),
              seen("STARTED", "p3", 1), seen("CANCELLED", "p3", 5, seen_ms=900),
              seen("STARTED", "a", 1), seen("STARTED", "a", 2), seen("SUCCEEDED", "a", 3),
              seen("STARTED", "b", 1), seen("SUCCEEDED", "b", 2)]  # fmt: skip
    assert poison_tally(poison, due, events, {"p3": 600}) == {
        "jobs": 3, "ended": {"CANCELLED": 1, "DEAD_LETTERED": 1, "SUCCEEDED": 1},
        "cancelled_within_ms": [300], "starts": [1, 2, 3], "most_starts_of_another_job": 2,
        "other_jobs_started_twice": 1, "ids_started_more_than_twice": []}  # fmt: skip


def test_the_trigger_tally_finds_a_record_without_its_job_a_job_fired_twice_a_stranger() -> None:
    feed = SourceFeed(load_settings(bootstrap_servers="127.0.0.1:1"))
    feed.matching = {"a": 1, "b": 1, "c": 1}
    feed.unparseable = {"orders/0/9", "orders/1/4"}
    feed.delivered = 6
    seen = [Seen(1, {"kind": "FIRED", "job_id": j}) for j in ("a", "b", "b", "load-1", "x")]
    found = trigger_tally(feed, seen, {"load-1"}, {"orders/0/9": 1, "orders/1/4": 2})
    assert (found["fired"], found["never_fired"], found["fired_twice"]) == (2, 1, 1)
    assert found["ids"]["never_fired"] == ["c"] and found["ids"]["fired_twice"] == ["b"]
    assert found["jobs_not_of_a_matching_record"] == 1
    assert (found["dead_lettered"], found["dead_letters_missing"], found["dead_lettered_twice"]) \
        == (2, 0, 1)
    assert len(problems(found)) == 4
