"""JobClient against the real broker: what lands on jobs.intake, with which key and where."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from jobstream._pipeline.clock import now_ms
from jobstream._pipeline.config import Settings
from jobstream._pipeline.errors import ValidationError
from jobstream._pipeline.jobs import JobClient, JobRequest, SubmissionError, idempotent_job_id
from jobstream._pipeline.model.job import validate_submitted
from jobstream._pipeline.partitioning import java_partition
from jobstream._pipeline.scheduling import CronSpec
from jobstream._pipeline.topics import Topics
from tests.pipeline.jobs.intake import intake_size, read_intake

EXAMPLE = Path(__file__).parents[3] / "docs" / "examples" / "submit_with_confluent_kafka.py"


def test_submit_lands_keyed_by_job_id_where_java_would_put_it(
    topics: Topics, unique_name: str
) -> None:
    with JobClient(topics.settings) as client:
        job_id = client.submit(job_type="report.generate", owner="acme", params={"month": "11"})
    [record] = read_intake(topics, unique_name, 1)
    assert record.key == job_id.encode()
    assert record.partition == java_partition(record.key, topics.settings.timer_partitions)
    assert record.event.name == "JobSubmitted"
    assert record.event.data["job_id"] == job_id
    assert record.event.data["spec"]["params"] == '{"month":"11"}'
    validate_submitted(record.event.data, now_ms=now_ms())


def test_submit_many_keeps_order_and_keys_workflows_together(
    topics: Topics, unique_name: str
) -> None:
    requests = [
        JobRequest(job_type="data.process", owner="acme", workflow_id="wf-7", params={"i": i})
        for i in range(3)
    ] + [JobRequest(job_type="image.render", owner="acme", priority="high")]
    with JobClient(topics.settings) as client:
        ids = client.submit_many(requests)
    assert len(set(ids)) == 4
    received = read_intake(topics, unique_name, 4)
    by_id = {r.event.data["job_id"]: r for r in received}
    assert set(by_id) == set(ids)
    workflow = [by_id[job_id] for job_id in ids[:3]]
    assert {r.key for r in workflow} == {b"wf-7"}
    assert len({r.partition for r in workflow}) == 1
    # One partition holds the workflow in submission order.
    assert [r.event.data["job_id"] for r in received if r.key == b"wf-7"] == ids[:3]
    assert by_id[ids[3]].key == ids[3].encode()
    assert by_id[ids[3]].event.data["spec"]["priority"] == "HIGH"


def test_idempotent_resubmission_returns_the_same_id_on_the_same_partition(
    topics: Topics, unique_name: str
) -> None:
    request = JobRequest(job_type="report.generate", owner="acme", idempotency_key="nightly-1")
    with JobClient(topics.settings) as client:
        first = client.submit(request)
        again = client.submit(job_type="report.generate", owner="acme", idempotency_key="nightly-1")
    assert first == again == idempotent_job_id("acme", "nightly-1")
    received = read_intake(topics, unique_name, 2)
    assert {r.key for r in received} == {first.encode()}
    assert len({r.partition for r in received}) == 1


def test_commands_land_keyed_like_their_job(topics: Topics, unique_name: str) -> None:
    with JobClient(topics.settings) as client:
        job_id = client.submit(
            job_type="report.generate", owner="acme", cron="0 9 * * *", workflow_id="wf-9"
        )
        client.pause(job_id, workflow_id="wf-9")
        client.resume(job_id, workflow_id="wf-9")
        client.update_schedule(
            job_id,
            cron=CronSpec(expression="0 10 * * *", timezone="Europe/Paris"),
            params={"v": 2},
            workflow_id="wf-9",
        )
        client.cancel(job_id, workflow_id="wf-9", reason="done")
    received = read_intake(topics, unique_name, 5)
    assert {r.key for r in received} == {b"wf-9"}
    assert len({r.partition for r in received}) == 1
    names = [(r.event.name, r.event.data.get("action")) for r in received]
    assert names == [
        ("JobSubmitted", None),
        ("ScheduleChanged", "PAUSE"),
        ("ScheduleChanged", "RESUME"),
        ("ScheduleChanged", "UPDATE"),
        ("JobCancelled", None),
    ]
    assert all(r.event.data["job_id"] == job_id for r in received)
    update = received[3].event.data
    assert update["cron"]["timezone"] == "Europe/Paris"
    assert update["params"] == '{"v":2}'
    assert received[4].event.data["reason"] == "done"


def test_an_invalid_submission_sends_nothing(topics: Topics, unique_name: str) -> None:
    with JobClient(topics.settings) as client:
        good = JobRequest(job_type="data.process", owner="acme")
        with pytest.raises(ValidationError) as refused:
            client.submit_many(
                [
                    good,
                    JobRequest(job_type="data.process", owner="acme", run_at="2000-01-01T00:00Z"),
                ]
            )
        assert refused.value.field == "spec.run_at_ms"
        with pytest.raises(ValidationError):
            client.submit(job_type="Data Process", owner="acme")
    assert intake_size(topics, unique_name) == 0


def test_a_missing_topic_fails_naming_it(kafka_bootstrap: str, unique_name: str) -> None:
    settings = Settings(bootstrap_servers=kafka_bootstrap, topic_prefix=f"{unique_name}.none.")
    with (
        JobClient(settings, delivery_timeout_s=2) as client,
        pytest.raises(SubmissionError) as failed,
    ):
        client.submit(job_type="data.process", owner="acme")
    assert failed.value.topic == f"{unique_name}.none.jobs.intake"
    assert failed.value.topic in str(failed.value)
    assert len(failed.value.job_ids) == 1


def test_submit_many_sends_100k_jobs_in_seconds(topics: Topics, unique_name: str) -> None:
    count = 100_000
    requests = [
        JobRequest(job_type="data.process", owner="acme", params={"row": i}) for i in range(count)
    ]
    with JobClient(topics.settings) as client:
        started = time.perf_counter()
        ids = client.submit_many(requests)
        elapsed = time.perf_counter() - started
    print(f"submit_many: {count} jobs in {elapsed:.2f} s ({count / elapsed:,.0f}/s)")
    assert len(set(ids)) == count
    assert intake_size(topics, unique_name) == count
    assert elapsed < 30, f"{count} jobs took {elapsed:.1f} s: is something flushing per job?"


def test_the_docs_example_produces_a_valid_submission(topics: Topics, unique_name: str) -> None:
    env = {
        **os.environ,
        "JOBSTREAM_BOOTSTRAP_SERVERS": topics.settings.bootstrap_servers,
        "JOBSTREAM_TOPIC_PREFIX": topics.settings.topic_prefix,
    }
    run = subprocess.run(
        [sys.executable, str(EXAMPLE)], env=env, capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 0, run.stderr
    job_id = run.stdout.strip()
    [record] = read_intake(topics, unique_name, 1)
    assert record.key == job_id.encode()
    assert record.partition == java_partition(record.key, topics.settings.timer_partitions)
    assert record.event.name == "JobSubmitted"
    assert record.event.data["job_id"] == job_id
    validate_submitted(record.event.data, now_ms=now_ms())
