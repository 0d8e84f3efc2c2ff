"""Results on jobs.results, end to end on the real broker: a worker process (in a folder
of its own) writes a 1 MB result, and the API server and ``jobstream result`` (another
process, in another folder) read it back with no disk shared with the worker; a result
over the limit fails its run with an error naming the limit."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from jobstream._connectors.api.server import ApiServer
from jobstream._ops.kafka.ports import free_ports
from jobstream._ops.stack import Stack, components
from jobstream._pipeline.topics import Topics
from tests.connectors.api.conftest import TOKENS, client
from tests.support.e2e_app import pattern
from tests.support.pipeline import process_env
from tests.support.reader import TopicReader
from tests.support.stack import (
    APP,
    api_fixtures,
    submit_over_api,
    topics_fixture,
    until_ended,
)
from tests.support.waiting import wait_for

ROOT = Path(__file__).resolve().parents[1]
MEGABYTE = 1024 * 1024


pipeline_topics = topics_fixture("results")


@pytest.fixture(scope="module")
def worker_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("stack")


@pytest.fixture(scope="module")
def stack(pipeline_topics: Topics, worker_home: Path) -> Iterator[Stack]:
    """The pipeline as processes whose working folder is their own (``worker_home/cwd``):
    what they write to disk stays under ``worker_home``."""
    cwd = worker_home / "cwd"
    cwd.mkdir()
    env = {**process_env(pipeline_topics.settings), "PYTHONPATH": str(ROOT)}
    running = Stack(worker_home, env, cwd=cwd)
    running.start(components(free_ports(4), app=APP, job_types=("data.process",), lease_s=5,
                             heartbeat_s=0.5))  # fmt: skip
    try:
        yield running
    finally:
        running.stop()


api, acme = api_fixtures()


def submit(client: httpx.Client, **params: Any) -> str:
    return submit_over_api(client, {"job_type": "data.process", "params": params,
                                    "retry": {"max_attempts": 1}})  # fmt: skip


ended = until_ended


def cli(api: ApiServer, cwd: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    """``jobstream <args>`` as a user runs it: a process of its own, in ``cwd``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("JOBSTREAM_")}
    env.update({"JOBSTREAM_API_URL": api.url, "JOBSTREAM_API_TOKEN": TOKENS["acme"],
                "PYTHONPATH": str(ROOT)})  # fmt: skip
    return subprocess.run([sys.executable, "-m", "jobstream", *args], cwd=cwd, env=env,
                          capture_output=True, timeout=120, check=False)  # fmt: skip


def test_a_megabyte_result_is_read_back_by_the_api_and_the_cli_with_no_disk_shared(
    api: ApiServer, acme: httpx.Client, pipeline_topics: Topics, worker_home: Path,
    tmp_path: Path,
) -> None:  # fmt: skip
    job_id = submit(acme, result_bytes=MEGABYTE)
    expected = pattern(MEGABYTE)
    doc = ended(acme, job_id)
    assert doc["state"] == "SUCCEEDED", doc
    assert doc["result"] is None
    assert doc["result_uri"] == f"kafka://{pipeline_topics.results}/{job_id}"

    def served() -> httpx.Response | None:  # the views index the result a moment later
        response = acme.get(f"/api/v1/jobs/{job_id}/result")
        return response if response.status_code == 200 else None

    response = wait_for(served, timeout_s=30, interval_s=0.3, what="the result served")
    assert response.content == expected
    assert response.headers["content-type"] == "application/octet-stream"
    assert response.headers["x-jobstream-execution"].startswith(f"{job_id}:")
    assert response.headers["content-disposition"] == "attachment"
    by_attempt = acme.get(f"/api/v1/jobs/{job_id}/executions/1/result")
    assert by_attempt.status_code == 200 and by_attempt.content == expected
    execution = response.headers["x-jobstream-execution"]
    by_id = acme.get(f"/api/v1/jobs/{job_id}/executions/{execution}/result")
    assert by_id.status_code == 200 and by_id.content == expected
    assert acme.get(f"/api/v1/jobs/{job_id}/executions/2/result").status_code == 404
    with client(api, TOKENS["bolt"]) as bolt:
        assert bolt.get(f"/api/v1/jobs/{job_id}/result").status_code == 404, "acme's job"

    saved = cli(api, tmp_path, "result", job_id, "-o", "out.bin")
    assert saved.returncode == 0, saved.stderr.decode()
    assert (tmp_path / "out.bin").read_bytes() == expected
    printed = cli(api, tmp_path, "result", job_id, "--attempt", "1")
    assert printed.returncode == 0 and printed.stdout == expected

    # The worker kept nothing of it on disk: the bytes came from Kafka.
    window = expected[MEGABYTE // 2:MEGABYTE // 2 + 64]
    held = [path for path in worker_home.rglob("*") if path.is_file()
            and window in path.read_bytes()]  # fmt: skip
    assert held == []


def test_a_small_json_result_is_inline_and_served_as_json(
    api: ApiServer, acme: httpx.Client, tmp_path: Path
) -> None:
    job_id = submit(acme)
    doc = ended(acme, job_id)
    assert (doc["state"], doc["result"], doc["result_uri"]) == ("SUCCEEDED", '{"attempt":1}', None)

    def served() -> httpx.Response | None:
        response = acme.get(f"/api/v1/jobs/{job_id}/result")
        return response if response.status_code == 200 else None

    response = wait_for(served, timeout_s=30, interval_s=0.3, what="the result served")
    assert response.headers["content-type"] == "application/json"
    assert response.json() == {"attempt": 1}
    printed = cli(api, tmp_path, "result", job_id)
    assert printed.returncode == 0 and printed.stdout == b'{"attempt":1}'


def test_a_handler_that_returns_none_leaves_no_record_and_its_result_is_null(
    api: ApiServer, acme: httpx.Client, pipeline_topics: Topics, tmp_path: Path
) -> None:
    job_id = submit(acme, no_result=True)
    doc = ended(acme, job_id)
    assert (doc["state"], doc["result"], doc["result_uri"]) == ("SUCCEEDED", "null", None)
    (run,) = acme.get(f"/api/v1/jobs/{job_id}/executions").json()["executions"]
    for path in ("result", "executions/1/result", f"executions/{run['execution_id']}/result"):
        response = acme.get(f"/api/v1/jobs/{job_id}/{path}")
        assert response.status_code == 200, (path, response.text)
        assert response.headers["content-type"] == "application/json"
        assert response.headers["x-jobstream-execution"] == run["execution_id"]
        assert response.json() is None
    printed = cli(api, tmp_path, "result", job_id)
    assert printed.returncode == 0 and printed.stdout == b"null", printed
    reader = TopicReader(pipeline_topics.settings, pipeline_topics.results,
                         pipeline_topics.settings.results_partitions)  # fmt: skip
    try:
        keys = [message.key() for message in reader.raw_to_end()]
    finally:
        reader.close()
    assert job_id.encode() not in keys, "nothing on jobs.results: SUCCEEDED's null says it"


def test_a_result_over_the_limit_fails_its_run_naming_the_limit(
    api: ApiServer, acme: httpx.Client, tmp_path: Path
) -> None:
    job_id = submit(acme, result_bytes=MEGABYTE + 1)
    doc = ended(acme, job_id)
    assert doc["state"] == "DEAD_LETTERED", doc
    assert doc["attempt"] == 1, "non-retryable: no second attempt"
    too_large = "jobstream._pipeline.worker.results.ResultTooLargeError"
    assert doc["last_error"]["error_type"] == too_large
    assert "over the limit of 1,048,576 bytes" in doc["last_error"]["message"]
    missing = acme.get(f"/api/v1/jobs/{job_id}/result")
    assert missing.status_code == 404 and "no result held" in missing.json()["detail"]
    printed = cli(api, tmp_path, "result", job_id)
    assert printed.returncode == 6 and b"404" in printed.stderr
