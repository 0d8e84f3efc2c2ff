"""GET /api/v1/jobs/{id}/params: a job's parameters whole, the URI jobs.status gives for
parameters too large to be inline; those over what the views keep are read back from the
job's submission on jobs.intake."""

from __future__ import annotations

import hashlib

import httpx
import orjson

from jobstream._connectors.views.fold import PARAMS_INLINE_BYTES
from jobstream._pipeline.model.params import PARAMS_URI
from tests.support.waiting import wait_for


def test_large_parameters_are_served_whole_from_their_uri(
    acme: httpx.Client, bolt: httpx.Client
) -> None:
    large = {"rows": ["r" * 100] * (PARAMS_INLINE_BYTES // 50), "month": "2024-10"}
    job_id = acme.post("/api/v1/jobs", json={"job_type": "data.process", "params": large,
                                             "labels": {"big": "1"}}).json()["job_id"]  # fmt: skip
    uri = PARAMS_URI.format(job_id=job_id)
    wait_for(lambda: acme.get("/api/v1/jobs", params={"label": "big=1"}).json()["items"],
             what="the job in the views")  # fmt: skip
    shown = acme.get(f"/api/v1/jobs/{job_id}").json()
    assert shown["params"] is None and shown["params_uri"] == uri
    text = orjson.dumps(large)
    assert (shown["params_bytes"], shown["params_sha256"]) == (
        len(text), hashlib.sha256(text).hexdigest())  # fmt: skip
    served = acme.get(uri)  # read back from jobs.intake: too large for the views
    assert served.status_code == 200, served.text
    assert served.headers["content-type"] == "application/json"
    assert served.content == text
    assert bolt.get(uri).status_code == 404, "another owner's parameters do not exist"


def test_small_parameters_are_served_too_and_an_unknown_job_is_404(acme: httpx.Client) -> None:
    body = {"job_type": "data.process", "params": {"n": 1}, "labels": {"small": "1"}}
    job_id = acme.post("/api/v1/jobs", json=body).json()["job_id"]
    wait_for(lambda: acme.get("/api/v1/jobs", params={"label": "small=1"}).json()["items"],
             what="the job in the views")  # fmt: skip
    assert acme.get(f"/api/v1/jobs/{job_id}").json()["params_uri"] is None
    assert acme.get(PARAMS_URI.format(job_id=job_id)).json() == {"n": 1}
    missing = acme.get(PARAMS_URI.format(job_id="01JD3W6Q8Z5X7M2K4N9P0R1S2T"))
    assert missing.status_code == 404 and missing.json()["field"] == "job_id"
