"""Each run's log lines on jobs.logs, end to end on the real broker: a job logs lines, fails
once and succeeds on its retry, on a worker whose handlers run on threads and on one
whose handlers run in child processes (``--isolation process``: their stdout and stderr
too). The API and ``jobstream logs`` (another process) serve each attempt its own lines;
a plain Kafka consumer finds them by the job's key; another owner gets 404; the worker's
bound on lines cuts a long log and says so."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from confluent_kafka import Message, TopicPartition

from jobstream._connectors.api.server import ApiServer
from jobstream._ops.kafka.ports import free_ports
from jobstream._ops.stack import Stack, components, worker
from jobstream._pipeline.durations import format_duration
from jobstream._pipeline.kafka import clients
from jobstream._pipeline.topics import Topics
from tests.connectors.api.conftest import TOKENS, client
from tests.support.logs_app import LOGGER
from tests.support.reader import gather
from tests.support.stack import (
    api_fixtures,
    running_stack,
    submit_over_api,
    topics_fixture,
    until_ended,
)
from tests.support.waiting import wait_for

ROOT = Path(__file__).resolve().parents[1]
APP = "tests.support.logs_app"
MAX_LINES = 50
FAST = {"initial_backoff_ms": 200, "jitter": 0, "max_attempts": 3}


pipeline_topics = topics_fixture("logs")


@pytest.fixture(scope="module")
def stack(pipeline_topics: Topics, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """Timers, status processor, retry router; a worker of ``logs.work`` (threads) and one
    of ``logs.child`` (child processes), keeping at most MAX_LINES lines of a run."""
    ports = free_ports(5)
    beat = ("--heartbeat", format_duration(500))
    parts = [*components(ports, app=APP, job_types=("logs.work",), lease_s=5, heartbeat_s=0.5),
             worker("logs.child", "logs.child-0", ports + 4, app=APP,
                    extra=(*beat, "--isolation", "process"))]  # fmt: skip
    with running_stack(pipeline_topics.settings, tmp_path_factory.mktemp("stack"), parts,
                       JOBSTREAM_MAX_LOG_LINES=str(MAX_LINES),
                       PYTHONPATH=str(ROOT)) as running:  # fmt: skip
        yield running


api, acme = api_fixtures()


def submit(acme: httpx.Client, job_type: str, **params: Any) -> str:
    return submit_over_api(acme, {"job_type": job_type, "params": params, "retry": FAST})


def succeeded(acme: httpx.Client, job_id: str) -> dict[str, Any]:
    doc = until_ended(acme, job_id)
    assert doc["state"] == "SUCCEEDED", doc
    return doc


def logs_of(acme: httpx.Client, job_id: str, attempt: int | str) -> dict[str, Any]:
    """A run's logs once the views have read them (a moment after the job's end)."""
    def served() -> dict[str, Any] | None:
        response = acme.get(f"/api/v1/jobs/{job_id}/executions/{attempt}/logs")
        return response.json() if response.status_code == 200 else None

    found: dict[str, Any] = wait_for(served, timeout_s=30, interval_s=0.3,
                                     what=f"the logs of attempt {attempt}")  # fmt: skip
    return found


def shown(found: dict[str, Any]) -> list[tuple[str, str, str]]:
    return sorted((line["logger"], line["level"], line["msg"]) for line in found["lines"])


def cli(api: ApiServer, *args: str) -> subprocess.CompletedProcess[str]:
    """``jobstream <args>`` as a user runs it, a process of its own."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("JOBSTREAM_")}
    env.update({"JOBSTREAM_API_URL": api.url, "JOBSTREAM_API_TOKEN": TOKENS["acme"],
                "PYTHONPATH": str(ROOT)})  # fmt: skip
    return subprocess.run([sys.executable, "-m", "jobstream", *args], env=env, capture_output=True,
                          text=True, timeout=120, check=False)  # fmt: skip


def records_of(topics: Topics, job_id: str, count: int) -> list[dict[str, str]]:
    """The headers of the first ``count`` records keyed ``job_id`` on jobs.logs, read as
    any Kafka client reads them (read committed)."""
    settings = topics.settings
    consumer = clients.consumer(settings, f"reader-{uuid.uuid4().hex[:8]}")
    consumer.assign([TopicPartition(topics.logs, p, 0) for p in range(settings.logs_partitions)])

    def headers(message: Message) -> dict[str, str] | None:
        if message.error() is not None or message.key() != job_id.encode():
            return None
        return {k: (v or b"").decode() for k, v in message.headers() or ()}

    return gather(consumer, headers, count, timeout_s=30,
                  what=f"{count} records of {job_id} on {topics.logs}")


@pytest.mark.parametrize("job_type", ["logs.work", "logs.child"])
def test_each_attempt_serves_its_own_lines(
    api: ApiServer, acme: httpx.Client, pipeline_topics: Topics, job_type: str
) -> None:
    job_id = submit(acme, job_type, lines=["reading input.csv"], prints=["printed"],
                    errors=["to stderr"], fail_until_attempt=2)  # fmt: skip
    succeeded(acme, job_id)
    first, second = logs_of(acme, job_id, 1), logs_of(acme, job_id, 2)
    runs = acme.get(f"/api/v1/jobs/{job_id}/executions").json()["executions"]
    assert [first["execution_id"], second["execution_id"]] == [r["execution_id"] for r in runs]
    assert (first["attempt"], second["attempt"], first["dropped_lines"]) == (1, 2, 0)

    streams = {  # a child's stdout and stderr are the run's; a thread's are the worker's
        "logs.work": [],
        "logs.child": [("stderr", "ERROR", "to stderr (attempt {n})"),
                       ("stdout", "INFO", "printed (attempt {n})")],
    }[job_type]  # fmt: skip
    expected = [(LOGGER, "INFO", "reading input.csv (attempt {n})"), *streams]
    assert shown(first) == sorted([(LOGGER, "ERROR", "giving up attempt 1"),
                                   *((a, b, c.format(n=1)) for a, b, c in expected)])
    assert shown(second) == sorted((a, b, c.format(n=2)) for a, b, c in expected)
    (failure,) = [line for line in first["lines"] if line["level"] == "ERROR"
                  and line["logger"] == LOGGER]  # fmt: skip
    assert failure["exc"].startswith("Traceback (most recent call last)")
    assert failure["exc"].endswith("Flaky: attempt 1 fails")
    by_id = acme.get(f"/api/v1/jobs/{job_id}/executions/{first['execution_id']}/logs").json()
    assert by_id == first
    assert acme.get(f"/api/v1/jobs/{job_id}/executions/3/logs").status_code == 404

    with client(api, TOKENS["bolt"]) as bolt:  # another owner: no such job, whatever the attempt
        for attempt in (1, 2, first["execution_id"]):
            refused = bolt.get(f"/api/v1/jobs/{job_id}/executions/{attempt}/logs")
            assert refused.status_code == 404, refused.text
            assert "not found" in refused.json()["detail"]

    latest = cli(api, "logs", job_id)
    assert latest.returncode == 0, latest.stderr
    assert "INFO    tests.logs_app: reading input.csv (attempt 2)" in latest.stdout
    assert "(attempt 1)" not in latest.stdout
    earlier = cli(api, "logs", job_id, "--attempt", "1")
    assert earlier.returncode == 0, earlier.stderr
    assert "ERROR   tests.logs_app: giving up attempt 1\nTraceback" in earlier.stdout
    assert "(attempt 2)" not in earlier.stdout
    refused = subprocess.run([sys.executable, "-m", "jobstream", "logs", job_id], env={
        **{k: v for k, v in os.environ.items() if not k.startswith("JOBSTREAM_")},
        "JOBSTREAM_API_URL": api.url, "JOBSTREAM_API_TOKEN": TOKENS["bolt"],
        "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=120, check=False)
    assert refused.returncode == 6 and "404" in refused.stderr

    records = records_of(pipeline_topics, job_id, 2)  # a plain consumer, by the job's key
    assert [(r["attempt"], r["execution-id"]) for r in records] == [
        ("1", first["execution_id"]), ("2", second["execution_id"])]


def test_a_long_log_keeps_its_head_and_says_how_many_lines_were_dropped(
    api: ApiServer, acme: httpx.Client
) -> None:
    job_id = submit(acme, "logs.work", bulk=MAX_LINES + 30)
    succeeded(acme, job_id)
    found = logs_of(acme, job_id, 1)
    assert [line["msg"] for line in found["lines"]] == [f"bulk line {i}" for i in range(MAX_LINES)]
    assert found["dropped_lines"] == 30
    printed = cli(api, "logs", job_id, "--json")
    assert printed.returncode == 0, printed.stderr
    assert len(printed.stdout.splitlines()) == MAX_LINES
    assert '"msg":"bulk line 0"' in printed.stdout.splitlines()[0]
    assert "30 more lines dropped" in printed.stderr


def test_a_run_that_logged_nothing_serves_an_empty_log_from_its_outcome(
    api: ApiServer, acme: httpx.Client
) -> None:
    job_id = submit(acme, "logs.work")
    succeeded(acme, job_id)
    found = logs_of(acme, job_id, 1)
    assert (found["lines"], found["dropped_lines"]) == ([], 0)
    (run,) = acme.get(f"/api/v1/jobs/{job_id}/executions").json()["executions"]
    assert run["log_lines"] == 0, "no jobs.logs record: the outcome told the views"
    printed = cli(api, "logs", job_id)
    assert printed.returncode == 0 and printed.stdout == "", printed

