"""Dead-letter tooling: filters, show, and redrive at a capped rate back through the timers."""

from __future__ import annotations

from contextlib import closing
from pathlib import Path
from typing import Any

import orjson
import pytest
from typer.testing import CliRunner

from jobstream._pipeline.clock import now_ms
from jobstream._pipeline.config import Settings
from jobstream._pipeline.dlq.cli import dlq_app, parse_instant
from jobstream._pipeline.dlq.reader import DlqFilter, DlqReader, DlqRecord, line
from jobstream._pipeline.dlq.redrive import Redriver, TokenBucket, redrive_outputs, select
from jobstream._pipeline.model.idempotency import idempotent_job_id
from jobstream._pipeline.model.records import evolve, plain, typed
from jobstream._pipeline.scheduling import new_job_id
from jobstream._pipeline.serde import Event
from jobstream._pipeline.timers.processor import TIMER_OPTIONS, timer_runner
from jobstream._pipeline.topics import Topics
from tests.pipeline.retry.events import error_info, execution
from tests.support.pipeline import (
    DESERIALIZE,
    SERIALIZE,
    Executions,
    in_thread,
    process_env,
    produce,
)
from tests.support.reader import TopicReader
from tests.support.waiting import wait_for

TIMEOUT_S = 90
HOUR = 3_600_000


def dead_lettered(*, at_ms: int, errors: list[dict[str, Any]], owner: str = "acme",
                  job_type: str = "data.process", reason: str = "exhausted",
                  job_id: str | None = None,
                  idempotency_key: str | None = None) -> Event:  # fmt: skip
    if idempotency_key is not None:
        job_id = idempotent_job_id(owner, idempotency_key)
    run = execution(job_id=job_id or new_job_id(), job_type=job_type, owner=owner)
    return Event.of(typed("DeadLettered", {
        "job_id": run["job_id"], "workflow_id": None, "idempotency_key": idempotency_key,
        "dead_lettered_at_ms": at_ms, "reason": reason, "attempts": len(errors),
        "spec": run["spec"], "errors": errors,
    }))  # fmt: skip


def record(event: Event, offset: int = 0) -> DlqRecord:
    return DlqRecord("jobs.dlq.data.process", 0, offset, event.data)


# -- broker-free -------------------------------------------------------------------------


def test_the_token_bucket_spaces_acquisitions_by_one_over_the_rate() -> None:
    clock = [100.0]
    bucket = TokenBucket(10.0, clock=lambda: clock[0],
                         sleep=lambda s: clock.__setitem__(0, clock[0] + s))  # fmt: skip
    for _ in range(5):
        bucket.acquire()
    assert clock[0] == pytest.approx(100.4)  # 5 at 10/s: the first at once, then 0.1 s each
    clock[0] += 10.0  # idle time accrues at most `burst` tokens
    bucket.acquire()
    bucket.acquire()
    assert clock[0] == pytest.approx(110.5)


def test_select_keeps_each_job_s_latest_dead_letter_oldest_first() -> None:
    t = now_ms()
    a1 = dead_lettered(at_ms=t - 3 * HOUR, errors=[error_info(1)])
    a2 = dead_lettered(at_ms=t - HOUR, errors=[error_info(1), error_info(2)],
                       job_id=a1.data.job_id)  # fmt: skip
    b = dead_lettered(at_ms=t - 2 * HOUR, errors=[error_info(1)])
    records = [record(a1, 0), record(b, 1), record(a2, 2)]
    assert [r.offset for r in select(records)] == [1, 2]
    assert [r.offset for r in select(records, limit=1)] == [1]


def test_filters_on_the_last_error_or_any_attempt_s() -> None:
    errors = [error_info(1, "ValueError"), error_info(2, "app.net.ConnectionError")]
    event = dead_lettered(at_ms=1000, errors=errors)
    rec = record(event)
    assert DlqFilter(error_type="ConnectionError").matches(rec)
    assert DlqFilter(error_type="app.net.ConnectionError").matches(rec)
    assert not DlqFilter(error_type="ValueError").matches(rec)
    assert DlqFilter(error_type="ValueError", any_attempt=True).matches(rec)
    assert DlqFilter(since_ms=1000, until_ms=1001, owner="acme", reason="exhausted").matches(rec)
    assert not DlqFilter(until_ms=1000).matches(rec)


def test_a_redrive_is_the_next_attempt_at_once_with_the_job_s_history() -> None:
    errors = [error_info(1, "ValueError"), error_info(2, "ConnectionError")]
    dead = dead_lettered(at_ms=1000, errors=errors, idempotency_key="key-1")
    topics = Topics(Settings(topic_prefix="t."))
    retry, step = redrive_outputs(topics, record(dead), 5000, requested_by="ops", reason="fixed")
    assert (retry.topic, step.topic) == ("t.jobs.retry", "t.jobs.events")
    scheduled = DESERIALIZE(SERIALIZE(retry.value)).data
    assert (scheduled.job_id, scheduled.attempt, scheduled.epoch, scheduled.retry_at_ms) == (
        dead.data.job_id, 3, 0, 5000
    )  # fmt: skip
    assert (scheduled.spec, scheduled.errors) == (dead.data.spec, dead.data.errors)
    assert scheduled.idempotency_key == "key-1"
    assert scheduled.resume_from is None, "it saved no checkpoint"
    event = DESERIALIZE(SERIALIZE(step.value)).data
    assert (event.kind, event.attempt, event.scheduled_at_ms, event.at_ms) == (
        "RETRY_SCHEDULED", 3, 5000, 5000
    )  # fmt: skip
    assert (event.job_type, event.owner, event.detail, event.requested_by) == (
        "data.process", "acme", "fixed", "ops"
    )  # fmt: skip


def test_a_redrive_resumes_from_the_job_s_latest_checkpoint() -> None:
    dead = dead_lettered(at_ms=1000, errors=[error_info(1, "ValueError")])
    saved = typed("Checkpoint", {"state": b"\x00\x32", "json": False, "attempt": 1,
                                 "execution_id": "x1", "at_ms": 900})  # fmt: skip
    dead = Event.of(evolve(dead.data, resume_from=saved))
    retry, _ = redrive_outputs(Topics(Settings()), record(dead), 5000)
    assert DESERIALIZE(SERIALIZE(retry.value)).data.resume_from == saved


def test_a_listing_line_is_the_last_error_and_where_the_record_lies() -> None:
    errors = [error_info(1, "ValueError"), error_info(2, "ConnectionError")]
    dead = dead_lettered(at_ms=1000, errors=errors)
    assert line(record(dead, 7)) == {
        "job_id": dead.data.job_id, "job_type": "data.process", "owner": "acme",
        "reason": "exhausted", "attempts": 2, "dead_lettered_at_ms": 1000,
        "error_type": "ConnectionError", "message": "ConnectionError on 2",
        "topic": "jobs.dlq.data.process", "partition": 0, "offset": 7,
    }  # fmt: skip


def test_instants_are_iso_8601_or_ages() -> None:
    assert parse_instant("2h", 10 * HOUR, "--since") == 8 * HOUR
    assert parse_instant("90s", 100_000, "--since") == 10_000
    assert parse_instant("1970-01-01T01:00Z", 0, "--since") == HOUR
    assert parse_instant("1970-01-01T02:00:00+01:00", 0, "--since") == HOUR
    assert parse_instant("1970-01-02", 0, "--since") == 24 * HOUR


# -- against the broker ------------------------------------------------------------------


@pytest.fixture
def cli(topics: Topics) -> Any:
    runner = CliRunner()
    env = {**process_env(topics.settings), "COLUMNS": "240"}

    def invoke(*args: str) -> Any:
        return runner.invoke(dlq_app, list(args), env=env, catch_exceptions=False)

    return invoke


def test_list_and_show_with_filters(topics: Topics, cli: Any) -> None:
    t = now_ms()
    a = dead_lettered(at_ms=t - 3 * HOUR, errors=[error_info(1, "ValueError"),
                                                  error_info(2, "ConnectionError")])  # fmt: skip
    a_again = dead_lettered(at_ms=t - 5 * 60_000, job_id=a.data.job_id, errors=[
        *map(plain, a.data.errors), error_info(3, "ConnectionError")])  # fmt: skip
    b = dead_lettered(at_ms=t - HOUR, reason="non_retryable",
                      errors=[error_info(1, "BadInput", retryable=False)])  # fmt: skip
    c = dead_lettered(owner="other", at_ms=t - 10 * 60_000, idempotency_key="key-c",
                      errors=[error_info(1, "ConnectionError")])  # fmt: skip
    render = dead_lettered(job_type="image.render", at_ms=t, errors=[error_info(1, "Timeout")])
    produce(topics.settings, topics.dead_letter("data.process"), [a, b, c, a_again])
    produce(topics.settings, topics.dead_letter("image.render"), [render])

    def job_ids(**selection: Any) -> list[str]:
        with DlqReader(topics.settings) as reader:
            return [r.job_id for r in reader.read(DlqFilter(**selection))]

    ids = {name: e.data.job_id for name, e in
           {"a": a, "b": b, "c": c, "render": render}.items()}  # fmt: skip
    assert sorted(job_ids()) == sorted([ids["a"], ids["b"], ids["c"], ids["a"], ids["render"]])
    assert job_ids(job_type="data.process", owner="acme") == [ids["a"], ids["b"], ids["a"]]
    assert job_ids(error_type="ConnectionError") == [ids["a"], ids["c"], ids["a"]]
    assert job_ids(error_type="ValueError") == []
    assert job_ids(error_type="ValueError", any_attempt=True) == [ids["a"], ids["a"]]
    assert job_ids(since_ms=t - 30 * 60_000, job_type="data.process") == [ids["c"], ids["a"]]
    assert job_ids(until_ms=t - 2 * HOUR) == [ids["a"]]
    assert job_ids(reason="non_retryable") == [ids["b"]]
    assert job_ids(job_type="image.render") == [ids["render"]]
    assert job_ids(job_type="no.such.type") == []

    listed = cli("list", "--owner", "acme", "--since", "4h", "--json")
    rows = [orjson.loads(line) for line in listed.stdout.splitlines()]
    assert [r["job_id"] for r in rows] == [ids["a"], ids["b"], ids["a"], ids["render"]]
    assert rows[2]["error_type"] == "ConnectionError" and rows[2]["attempts"] == 3
    table = cli("list", "--type", "data.process", "--error-type", "BadInput")
    assert table.exit_code == 0 and ids["b"] in table.stdout and ids["c"] not in table.stdout
    assert "1 dead-lettered job matches" in table.stdout

    shown = cli("show", ids["a"])
    assert shown.exit_code == 0
    assert shown.stdout.count(f"{ids['a']}  ") == 2  # both dead letters of the job
    assert "attempt 3" in shown.stdout and "Traceback (most recent call last)" in shown.stdout
    assert cli("show", new_job_id()).exit_code == 1


def test_redrive_at_a_capped_rate_keeps_id_history_and_key_and_the_timers_fire_it(
    topics: Topics, cli: Any, tmp_path: Path
) -> None:
    s = topics.settings
    t = now_ms()
    errors = [error_info(1, "ConnectionError"), error_info(2, "Timeout")]
    keyed = dead_lettered(owner="other", at_ms=t - HOUR, idempotency_key="key-r", errors=errors)
    others = [dead_lettered(at_ms=t - HOUR + i, errors=[error_info(1)]) for i in range(5)]
    produce(s, topics.dead_letter("data.process"), [keyed, *others])

    dry = cli("redrive", "--type", "data.process", "--dry-run")
    assert "6 jobs would be redriven (dry run)" in dry.stdout

    rate = 5.0
    with DlqReader(s) as reader:
        chosen = select(reader.read(DlqFilter(owner="acme")))
    report = Redriver(s, rate=rate).redrive([*chosen, *chosen])  # a repeat is not redriven
    assert [r.job_id for r in report.redriven] == [e.data.job_id for e in others]
    assert report.elapsed_s >= (len(others) - 1) / rate * 0.9

    done = cli("redrive", "--owner", "other", "--error-type", "Timeout", "--rate", "50",
               "--by", "ops-alice", "--why", "the endpoint is back")  # fmt: skip
    assert "1 job redriven" in done.stdout, done.stdout

    retries = TopicReader(s, topics.retry, s.timer_partitions)
    events = TopicReader(s, topics.events, s.events_partitions)
    job_id = keyed.data.job_id
    try:
        wait_for(lambda: len(retries.poll()) >= 6, timeout_s=TIMEOUT_S, what="6 redrives")
        (retry,) = retries.of_job(job_id)
        assert (retry["attempt"], retry["idempotency_key"]) == (3, "key-r")
        assert retry["errors"] == keyed.data.errors and retry["spec"] == keyed.data.spec
        (step,) = wait_for(lambda: events.of_job(job_id, kind="RETRY_SCHEDULED"),
                           timeout_s=TIMEOUT_S, what="the RETRY_SCHEDULED event")  # fmt: skip
        assert (step["detail"], step["attempt"]) == ("the endpoint is back", 3)
        assert step["requested_by"] == "ops-alice", "who asked for the redrive"
        assert len(retries.poll()) == 6
    finally:
        retries.close()
        events.close()

    timers = timer_runner(s, TIMER_OPTIONS.evolve(instance_id="t", state_dir=tmp_path / "state"))
    with in_thread(timers), closing(Executions(s)) as executions:
        wait_for(lambda: executions.poll() >= 6, timeout_s=TIMEOUT_S, what="6 executions")
        (run,) = [r for r in executions.records.values() if r["job_id"] == job_id]
        assert (run["attempt"], run["idempotency_key"]) == (3, "key-r")
        assert run["errors"] == keyed.data.errors
