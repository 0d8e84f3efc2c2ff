"""Quotas per owner on the real API and broker, one test per probe of issue 26: the
submission rate (429 with Retry-After), job types, pending jobs, live streams, the
limits and use on /api/v1/me, and an override that applies with no restart."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from jobstream._connectors.api.server import ApiServer
from jobstream._pipeline.config import Settings
from jobstream._pipeline.kafka import clients
from jobstream._pipeline.quotas.model import Quota
from jobstream._pipeline.quotas.topic import read_quotas, read_quotas_set_by, set_quota
from jobstream._pipeline.serde import encode_status
from jobstream._pipeline.topics import Topics
from tests.connectors.api.conftest import ADMIN, ADMIN_NAME, TOKENS, api_settings, client
from tests.connectors.views.records import status
from tests.support.sse import EventStream
from tests.support.waiting import wait_for

JOB = {"job_type": "data.process"}


@contextmanager
def serving(settings: Settings, tmp_path: Path, **quotas: object) -> Iterator[ApiServer]:
    with ApiServer(settings, api_settings(tmp_path, **quotas)) as server:
        yield server


def refused(response: httpx.Response, quota: str) -> dict[str, Any]:
    assert response.status_code == 429, response.text
    body: dict[str, Any] = response.json()
    assert body["quota"] == quota and body["detail"].startswith(f"quota {quota}: ")
    return body


def test_submissions_past_the_rate_are_refused_with_retry_after(
        settings: Settings, topics: Topics, tmp_path: Path) -> None:  # fmt: skip
    with (serving(settings, tmp_path, quota_submit_rate=2.0, quota_submit_burst=10) as server,
          client(server, TOKENS["acme"]) as acme,
          client(server, TOKENS["bolt"]) as bolt):  # fmt: skip
        started = time.monotonic()
        assert acme.post("/api/v1/jobs/batch", json={"jobs": [JOB] * 8}).status_code == 201
        answers = [acme.post("/api/v1/jobs", json=JOB) for _ in range(20)]
        elapsed = time.monotonic() - started
        accepted = sum(1 for answer in answers if answer.status_code == 201)
        assert 2 <= accepted <= 2 + 2 * elapsed + 1  # the burst's last 2, then 2 a second
        last = answers[-1]
        body = refused(last, "submit_rate")
        assert "'acme' may submit 2 jobs a second per token (at once: 10)" in body["detail"]
        assert last.headers["Retry-After"].isdigit() and int(last.headers["Retry-After"]) >= 1
        refused(acme.post("/api/v1/jobs/batch", json={"jobs": [JOB] * 3}), "submit_rate")
        steps = [{"name": n, "job_type": JOB["job_type"]} for n in ("a", "b", "c")]
        refused(acme.post("/api/v1/workflows", json={"steps": steps}), "submit_rate")
        # another owner's token is not held back by acme's
        assert bolt.post("/api/v1/jobs/batch", json={"jobs": [JOB] * 10}).status_code == 201
        wait_for(lambda: acme.post("/api/v1/jobs", json=JOB).status_code == 201, timeout_s=10,
                 interval_s=0.25, what="acme's next token")  # fmt: skip


def test_a_new_job_type_past_the_quota_is_refused_naming_it(
        settings: Settings, topics: Topics, tmp_path: Path) -> None:  # fmt: skip
    with (serving(settings, tmp_path, quota_job_types=2) as server,
          client(server, TOKENS["acme"]) as acme, client(server, TOKENS["bolt"]) as bolt,
          client(server, ADMIN) as admin):  # fmt: skip
        three = [{"job_type": t} for t in ("t.a", "t.b", "t.c")]
        body = refused(acme.post("/api/v1/jobs/batch", json={"jobs": three}), "job_types")
        assert body["field"] == "jobs[2].spec.job_type"
        assert "owner 'acme' may have jobs of at most 2 job types" in body["detail"]
        assert acme.post("/api/v1/jobs/batch", json={"jobs": three[:2] * 3}).status_code == 201
        body = refused(acme.post("/api/v1/jobs", json={"job_type": "t.c"}), "job_types")
        assert body["field"] == "spec.job_type" and "'t.c' would be one more" in body["detail"]
        assert acme.post("/api/v1/jobs", json={"job_type": "t.b"}).status_code == 201
        steps = [{"name": "first", "job_type": "t.a"}, {"name": "second", "job_type": "t.d",
                                                         "depends_on": ["first"]}]  # fmt: skip
        body = refused(acme.post("/api/v1/workflows", json={"steps": steps}), "job_types")
        assert body["field"] == "steps.1.spec.job_type"
        # the owner's quota applies to an admin acting for it; another owner has its own
        refused(admin.post("/api/v1/jobs", json={"job_type": "t.c", "owner": "acme"}),
                "job_types")  # fmt: skip
        assert bolt.post("/api/v1/jobs", json={"job_type": "t.c"}).status_code == 201
        # once the views hold acme's jobs, its types are theirs: still two, and no third
        wait_for(lambda: acme.get("/api/v1/jobs", params={"limit": 10}).json()["items"][6:],
                 what="the views to hold acme's jobs")  # fmt: skip
        refused(acme.post("/api/v1/jobs", json={"job_type": "t.c"}), "job_types")


def test_pending_jobs_past_the_quota_are_refused_until_one_ends(
        settings: Settings, topics: Topics, tmp_path: Path) -> None:  # fmt: skip
    with (serving(settings, tmp_path, quota_pending_jobs=3) as server,
          client(server, TOKENS["acme"]) as acme,
          client(server, TOKENS["bolt"]) as bolt):  # fmt: skip
        accepted = acme.post("/api/v1/jobs/batch", json={"jobs": [JOB] * 3})
        assert accepted.status_code == 201
        body = refused(acme.post("/api/v1/jobs", json=JOB), "pending_jobs")
        assert body["detail"] == ("quota pending_jobs: owner 'acme' may hold at most 3 jobs "
                                  "not ended and holds 3; this request brings 1")  # fmt: skip
        assert bolt.post("/api/v1/jobs", json=JOB).status_code == 201
        job_id = accepted.json()["job_ids"][0]
        record = {"job_id": job_id, "spec": {"job_type": "data.process", "owner": "acme"}}
        producer = clients.producer(settings)
        producer.produce(topics.status, encode_status(status(record, "SUCCEEDED", at_ms=2**40)),
                         job_id.encode())  # fmt: skip
        assert producer.flush(30) == 0
        wait_for(lambda: acme.post("/api/v1/jobs", json=JOB).status_code == 201,
                 interval_s=0.2, what="a job accepted once one has ended")  # fmt: skip
        refused(acme.post("/api/v1/jobs", json=JOB), "pending_jobs")


def test_streams_past_the_quota_are_refused_and_a_closed_one_frees_its_slot(
        settings: Settings, topics: Topics, tmp_path: Path) -> None:  # fmt: skip
    with (serving(settings, tmp_path, quota_streams=2) as server,
          client(server, TOKENS["acme"]) as acme,
          EventStream(server.url, TOKENS["acme"]) as first,
          EventStream(server.url, TOKENS["acme"]) as second):  # fmt: skip
        assert first.status == second.status == 200

        def open_one() -> int:
            with acme.stream("GET", "/api/v1/stream") as response:
                if response.status_code == 429:
                    refused(httpx.Response(429, content=response.read()), "streams")
                return response.status_code

        assert open_one() == 429
        assert acme.get("/api/v1/me").json()["quotas"]["streams"] == {"used": 2, "limit": 2}
        with EventStream(server.url, TOKENS["bolt"]) as theirs:  # bolt's token: its own count
            assert theirs.status == 200
        first.__exit__(None, None, None)
        wait_for(lambda: open_one() == 200, interval_s=0.2, what="the closed stream's slot")
        with EventStream(server.url, TOKENS["acme"]) as third:
            assert third.status == 200
            assert open_one() == 429


def test_me_shows_the_owners_limits_and_use(server: ApiServer, acme: httpx.Client,
                                            admin: httpx.Client) -> None:  # fmt: skip
    assert acme.post("/api/v1/jobs/batch", json={"jobs": [JOB, {"job_type": "report.make"}]}
                     ).status_code == 201  # fmt: skip
    assert acme.get("/api/v1/me").json()["quotas"]["pending_jobs"]["used"] >= 2
    # once the views hold the jobs, they count there, once
    wait_for(lambda: len(acme.get("/api/v1/jobs").json()["items"]) == 2, what="the views")
    with EventStream(server.url, TOKENS["acme"]):
        me = acme.get("/api/v1/me").json()
    assert (me["owner"], me["admin"]) == ("acme", False)
    available = me["quotas"]["submit_rate"].pop("available")
    assert 4998 <= available <= 5000  # two taken, and what was earned since
    assert me["quotas"] == {
        "owner": "acme", "override": {},
        "job_types": {"used": 2, "limit": 20}, "pending_jobs": {"used": 2, "limit": 100_000},
        "submit_rate": {"per_s": 1000.0, "burst": 5000}, "streams": {"used": 1, "limit": 20},
    }  # fmt: skip
    assert admin.get("/api/v1/me").json() == {"owner": None, "admin": True, "quotas": None}
    shown = admin.get("/api/v1/quotas/acme").json()
    assert shown["job_types"] == {"used": 2, "limit": 20}
    assert shown["submit_rate"]["available"] is None
    assert acme.get("/api/v1/quotas/bolt").status_code == 404


def test_an_override_applies_live_with_no_restart(topics: Topics, server: ApiServer,
                                                 acme: httpx.Client,
                                                 admin: httpx.Client) -> None:  # fmt: skip
    # from outside the API process, as `jobstream quotas set --owner acme --job-types 1` does
    set_quota(topics.settings, "acme", Quota(job_types=1))
    wait_for(lambda: acme.get("/api/v1/me").json()["quotas"]["job_types"]["limit"] == 1,
             what="the override read from jobs.quotas")  # fmt: skip
    assert acme.get("/api/v1/me").json()["quotas"]["override"] == {"job_types": 1}
    assert acme.post("/api/v1/jobs", json={"job_type": "t.a"}).status_code == 201
    refused(acme.post("/api/v1/jobs", json={"job_type": "t.b"}), "job_types")

    # over HTTP, by an admin: it applies at once in this process
    assert acme.put("/api/v1/quotas/acme", json={"job_types": 5}).status_code == 403
    put = admin.put("/api/v1/quotas/acme", json={"pending_jobs": 1, "streams": 0})
    assert put.status_code == 200, put.text
    assert put.json()["override"] == {"pending_jobs": 1, "streams": 0}
    assert put.json()["job_types"]["limit"] == 20  # replaced whole: the default again
    refused(acme.post("/api/v1/jobs", json={"job_type": "t.b"}), "pending_jobs")
    with acme.stream("GET", "/api/v1/stream") as response:
        assert response.status_code == 429
    assert admin.put("/api/v1/quotas/acme", json={}).status_code == 422
    assert admin.put("/api/v1/quotas/acme", json={"streams": -1}).status_code == 422
    assert read_quotas_set_by(topics.settings) == {
        "acme": (Quota(pending_jobs=1, streams=0), f"api:admin:{ADMIN_NAME}")}

    assert admin.delete("/api/v1/quotas/acme").status_code == 204
    assert acme.post("/api/v1/jobs", json={"job_type": "t.b"}).status_code == 201
    assert acme.get("/api/v1/me").json()["quotas"]["override"] == {}
    assert read_quotas(topics.settings) == {}


def test_the_probes_batch_of_30_new_job_types_is_refused_by_the_default(
        acme: httpx.Client) -> None:  # fmt: skip
    thirty = [{"job_type": f"probe.t{i}"} for i in range(30)]
    body = refused(acme.post("/api/v1/jobs/batch", json={"jobs": thirty}), "job_types")
    assert body["field"] == "jobs[20].spec.job_type", "the 21st type is past the default 20"
