"""/api/v1/stream, /api/v1/overview and /api/v1/me against the real service and broker."""

from __future__ import annotations

import time
from pathlib import Path

import httpx

from jobstream._connectors.api.server import ApiServer
from jobstream._pipeline.config import Settings
from jobstream._pipeline.kafka import clients
from jobstream._pipeline.serde import encode_status
from jobstream._pipeline.topics import Topics
from tests.connectors.api.conftest import ADMIN, TOKENS, api_settings
from tests.connectors.views.records import status
from tests.support.sse import EventStream
from tests.support.waiting import wait_for


def _submit(client: httpx.Client, **fields: object) -> str:
    response = client.post("/api/v1/jobs", json={"job_type": "data.process", **fields})
    assert response.status_code == 201, response.text
    return str(response.json()["job_id"])


def test_the_stream_and_overview_need_a_token(anonymous: httpx.Client) -> None:
    for path in ("/api/v1/stream", "/api/v1/overview", "/api/v1/me"):
        response = anonymous.get(path, headers={"Authorization": "Bearer nope"})
        assert response.status_code == 401 and response.json()["field"] == "Authorization"


def test_me_names_the_owner_or_admin(acme: httpx.Client, admin: httpx.Client) -> None:
    mine = acme.get("/api/v1/me").json()
    assert (mine["owner"], mine["admin"], mine["quotas"]["owner"]) == ("acme", False, "acme")
    assert admin.get("/api/v1/me").json() == {"owner": None, "admin": True, "quotas": None}


def test_status_changes_stream_to_their_owner_and_admins_only(
    settings: Settings, topics: Topics, server: ApiServer, acme: httpx.Client, bolt: httpx.Client
) -> None:
    with (EventStream(server.url, TOKENS["acme"]) as mine,
          EventStream(server.url, TOKENS["bolt"]) as theirs,
          EventStream(server.url, ADMIN) as everyone):  # fmt: skip
        assert mine.events[0] == ("ready", {})
        acme_job, bolt_job = _submit(acme), _submit(bolt)
        # a status from jobs.status reaches the stream as the view folds it
        record = {"job_id": acme_job, "spec": {"job_type": "data.process", "owner": "acme"}}
        producer = clients.producer(settings)
        producer.produce(topics.status, encode_status(status(record, "RUNNING", at_ms=2**40)),
                         acme_job.encode())  # fmt: skip
        assert producer.flush(30) == 0

        def states(stream: EventStream, job_id: str) -> list[str]:
            return [doc["state"] for doc in stream.statuses() if doc["job_id"] == job_id]

        wait_for(lambda: states(mine, acme_job)[-1:] == ["RUNNING"], what="acme's RUNNING")
        wait_for(lambda: states(everyone, acme_job)[-1:] == ["RUNNING"], what="admin's RUNNING")
        wait_for(lambda: states(theirs, bolt_job), what="bolt's own job")
        wait_for(lambda: states(everyone, bolt_job), what="bolt's job for the admin")
        assert states(mine, acme_job)[0] == "SUBMITTED"
        assert {doc["owner"] for doc in mine.statuses()} == {"acme"}
        assert {doc["owner"] for doc in theirs.statuses()} == {"bolt"}
        assert mine.statuses()[-1]["job_type"] == "data.process"
    wait_for(lambda: len(server.services.feed) == 0, what="closed streams to unsubscribe")


def test_overview_counts_what_each_token_may_see(
    server: ApiServer, acme: httpx.Client, bolt: httpx.Client, admin: httpx.Client
) -> None:
    for _ in range(3):
        _submit(acme, labels={"batch": "a"})
    _submit(bolt, job_type="image.render")

    def seen(client: httpx.Client, total: int) -> dict | None:
        body = client.get("/api/v1/overview").json()
        return body if body["total"] == total else None

    mine = wait_for(lambda: seen(acme, 3), what="acme's three jobs counted")
    assert mine["by_type"] == {"data.process": mine["by_state"]}
    assert sum(mine["by_state"].values()) == len(acme.get("/api/v1/jobs").json()["items"])
    theirs = wait_for(lambda: seen(bolt, 1), what="bolt's job counted")
    assert list(theirs["by_type"]) == ["image.render"]
    everything = wait_for(lambda: seen(admin, 4), what="every job counted for the admin")
    assert set(everything["by_type"]) == {"data.process", "image.render"}
    assert everything["promise_ms"] == 2000 and everything["dead_letters"] == 0
    assert len(everything["activity"]) > 100 and "fire_lateness_p99_ms" in everything["activity"][0]


def test_stopping_the_server_ends_the_open_streams(settings: Settings, topics: Topics,
                                                   tmp_path: Path) -> None:  # fmt: skip
    running = ApiServer(settings, api_settings(tmp_path)).start()
    try:
        stream = EventStream(running.url, TOKENS["acme"]).__enter__()
    finally:
        started = time.monotonic()
        running.stop()
    assert time.monotonic() - started < 5
    stream._thread.join(5)
    assert not stream._thread.is_alive()
    stream.__exit__(None, None, None)
