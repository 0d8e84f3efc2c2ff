"""POST /api/v1/jobs/{id}/backfill and ``jobstream backfill`` against the real service,
broker and timers: a day of an hourly job runs its 24 occurrences once, however often the
backfill is asked for and whoever re-sends its jobs."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
from confluent_kafka import TopicPartition

from jobstream._connectors.api.server import ApiServer
from jobstream._pipeline.config import Settings
from jobstream._pipeline.jobs import JobClient
from jobstream._pipeline.jobs.backfill import OF_LABEL, BackfillSource, occurrence_request
from jobstream._pipeline.kafka import clients
from jobstream._pipeline.runtime.options import processor_group
from jobstream._pipeline.timers.processor import TIMER_OPTIONS, TimerProcessor, timer_runner
from jobstream._pipeline.topics import Topics
from tests.connectors.api.conftest import TOKENS
from tests.support.api import submit, visible
from tests.support.pipeline import Executions, in_thread
from tests.support.waiting import wait_for

HOUR = timedelta(hours=1)


def _day() -> tuple[datetime, datetime]:
    """Yesterday, midnight to midnight UTC: a full past day whatever the test's hour."""
    today = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    return today - timedelta(days=1), today


def _iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def _intake_consumed(settings: Settings, topics: Topics) -> bool:
    """Whether the timers have committed every record on jobs.intake (read, decided)."""
    group = processor_group(settings.topic_prefix, TimerProcessor.name)
    consumer = clients.consumer(settings, group)
    try:
        parts = [TopicPartition(topics.intake, p) for p in range(settings.timer_partitions)]
        for tp in consumer.committed(parts, timeout=10):
            _, high = consumer.get_watermark_offsets(tp, timeout=10)
            if high > 0 and tp.offset < high:
                return False
        return True
    finally:
        consumer.close()


def labelled(c: httpx.Client, job_id: str) -> set[str]:
    """The ids of the jobs labelled as ``job_id``'s backfill that the views hold."""
    page = c.get("/api/v1/jobs", params={"label": f"{OF_LABEL}={job_id}", "limit": 500})
    return {item["job_id"] for item in page.json()["items"]}


def test_an_hourly_job_s_day_runs_24_occurrences_once_however_often_it_is_backfilled(
    acme: httpx.Client, bolt: httpx.Client, settings: Settings, topics: Topics,
    tmp_path: Path, server: ApiServer,
) -> None:  # fmt: skip
    start, end = _day()
    body = {"from": _iso(start), "to": _iso(end), "rate": 1000}
    hourly = submit(acme, cron="0 * * * *", params={"n": 7}, labels={"team": "red"},
                    retry={"max_attempts": 5}, timeout_ms=60_000).json()["job_id"]  # fmt: skip
    once = submit(acme, run_at="2030-01-01T00:00Z").json()["job_id"]
    wait_for(lambda: visible(acme, hourly) and visible(acme, once), what="jobs in the views")
    path = f"/api/v1/jobs/{hourly}/backfill"

    assert bolt.post(path, json=body).status_code == 404  # another owner's job
    not_recurring = acme.post(f"/api/v1/jobs/{once}/backfill", json=body)
    assert not_recurring.status_code == 409 and not_recurring.json()["field"] == "job_id"
    future = _iso(datetime.now(UTC) + HOUR)
    cases = [
        ({**body, "to": _iso(start - HOUR)}, "to"),  # before from
        ({**body, "to": future}, "to"),
        ({**body, "from": _iso(start - timedelta(days=500))}, "to"),  # 12,000 occurrences
        ({**body, "from": "yesterday"}, "from"),
        ({**body, "to": "2026-03-01T00:00"}, "to"),  # no zone
        ({**body, "rate": 0}, "rate"),
        ({"to": body["to"]}, "from"),
    ]
    for bad, field in cases:
        reply = acme.post(path, json=bad)
        assert reply.status_code == 422, (bad, reply.text)
        assert reply.json()["field"] == field, (bad, reply.json())

    dry = acme.post(path, json={**body, "dry_run": True})
    assert dry.status_code == 202, dry.text
    planned = dry.json()
    assert (planned["submitted"], planned["existing"], len(planned["occurrences"])) == (0, 0, 24)
    ids = [item["job_id"] for item in planned["occurrences"]]
    assert len(set(ids)) == 24 and not any(item["created"] for item in planned["occurrences"])
    assert planned["occurrences"][0]["occurrence"] == _iso(start)

    runs = Executions(settings)
    options = TIMER_OPTIONS.evolve(instance_id="t", state_dir=tmp_path / "timers")
    try:
        with in_thread(timer_runner(settings, options)):
            first = acme.post(path, json=body)
            assert first.status_code == 202, first.text
            assert (first.json()["submitted"], first.json()["existing"]) == (24, 0)
            assert [item["job_id"] for item in first.json()["occurrences"]] == ids

            def fired() -> list[dict]:
                runs.poll()
                return [run for run in runs.records.values() if run["job_id"] in ids]

            wait_for(lambda: len(fired()) == 24, what="24 occurrences fired")
            wait_for(lambda: set(ids) <= labelled(acme, hourly), what="the occurrences viewed")

            again = acme.post(path, json=body)  # the views know every occurrence
            assert again.status_code == 202, again.text
            assert (again.json()["submitted"], again.json()["existing"]) == (0, 24)

            # A second API, whose views have not read them, would send them all again: the
            # timers drop each as a duplicate of its id.
            source = BackfillSource(job_id=hourly, job_type="data.process", owner="acme",
                                    params='{"n":7}', retry={"max_attempts": 5})  # fmt: skip
            with JobClient(settings) as client:
                client.submit_many([occurrence_request(source, item["occurrence_ms"],
                                                       run_at_ms=item["occurrence_ms"] + 1)
                                    for item in planned["occurrences"]])  # fmt: skip
            wait_for(lambda: _intake_consumed(settings, topics), what="timers caught up")
            assert len(fired()) == 24 and not runs.duplicates()

            # The CLI, through the API: a third backfill of the day runs none either.
            env = {**os.environ, "JOBSTREAM_API_URL": server.url,
                   "JOBSTREAM_API_TOKEN": TOKENS["acme"]}  # fmt: skip
            cli = subprocess.run([sys.executable, "-m", "jobstream", "backfill", hourly, "--from",
                                  _iso(start), "--to", _iso(end), "--no-wait"], env=env,
                                 text=True, capture_output=True, timeout=120)  # fmt: skip
            assert cli.returncode == 0, cli.stderr
            assert cli.stdout.split() == ids
            assert "0 sent" in cli.stderr and "24 run or sent already" in cli.stderr
            wait_for(lambda: _intake_consumed(settings, topics), what="timers caught up")
            records = fired()
            assert len(records) == 24 and not runs.duplicates()
    finally:
        runs.close()

    by_id = {run["job_id"]: run for run in records}
    assert sorted(by_id) == sorted(ids)
    spec = by_id[ids[5]]["spec"]  # the recurring job's, copied
    assert spec["retry"]["max_attempts"] == 5 and spec["timeout_ms"] == 60_000
    job = acme.get(f"/api/v1/jobs/{ids[5]}").json()
    assert job["labels"] == {"team": "red", OF_LABEL: hourly,
                             "backfill.occurrence": _iso(start + 5 * HOUR)}  # fmt: skip
    assert job["params"] == {"n": 7} and job["schedule"]["cron"] is None
