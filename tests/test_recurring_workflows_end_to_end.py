"""A recurring workflow paused, resumed, updated and triggered through the whole pipeline
as processes and the HTTP API beside it, against the real broker.

Its cron is daily, so every run here is a trigger: the cron has no seconds, and a run a
minute would take minutes. Commands on one workflow are read in order on its partition, so
once a later command's effect is seen, an earlier one has been applied or ignored.
"""

from __future__ import annotations

import uuid

import httpx
import orjson

from jobstream._ops.stack import Stack
from jobstream._pipeline.jobs.client import JobClient
from jobstream._pipeline.serde import JobStatus
from jobstream._pipeline.status.query import read_statuses
from jobstream._pipeline.topics import Topics
from jobstream._pipeline.workflows import RUN_LABEL
from jobstream._pipeline.workflows.ids import schedule_job_id
from tests.support.stack import api_fixtures, pipeline_fixtures
from tests.support.waiting import wait_for

OWNER = "acme"
WORKFLOW = f"rwf-{uuid.uuid4().hex[:12]}"
"""Its own id each session: a broker kept between sessions keeps the module's topics."""
STATUS_ID = schedule_job_id(OWNER, WORKFLOW)

pipeline_topics, stack = pipeline_fixtures("rwf", lease_s=3)
api, acme = api_fixtures()


def step(name: str) -> dict[str, object]:
    return {"name": name, "job_type": "data.process", "params": {"step": name}}


def schedule_status(topics: Topics, state: str, runs: int) -> JobStatus | None:
    found = read_statuses(topics.settings, job_id=STATUS_ID, timeout_s=10).get(STATUS_ID)
    return found if found is not None and (found.state, found.runs) == (state, runs) else None


def run_steps(topics: Topics) -> list[JobStatus]:
    """The jobs of the workflow's runs (their label names it), ended or not."""
    return [s for s in read_statuses(topics.settings, owner=OWNER, timeout_s=10).values()
            if (s.labels or {}).get(RUN_LABEL) == WORKFLOW]  # fmt: skip


def test_pause_stops_runs_resume_brings_them_back_and_an_update_changes_the_next_steps(
    stack: Stack, pipeline_topics: Topics, acme: httpx.Client
) -> None:
    topics = pipeline_topics
    with JobClient(topics.settings) as client:
        client.submit_workflow([step("a")], owner=OWNER, workflow_id=WORKFLOW,
                               schedule="0 3 * * *")  # fmt: skip
        scheduled = wait_for(lambda: schedule_status(topics, "SCHEDULED", 0),
                             what="the workflow's own status")  # fmt: skip
        assert scheduled.job_type == "jobstream.workflow" and scheduled.next_fire_at_ms

        client.trigger_workflow(OWNER, WORKFLOW, requested_by="tests")
        first = wait_for(lambda: schedule_status(topics, "SCHEDULED", 1), timeout_s=40,
                         what="the first run ended")  # fmt: skip
        assert orjson.loads(first.result or "")["outcome"] == "SUCCEEDED"

        paused = acme.post(f"/api/v1/workflows/{WORKFLOW}/pause", json={"reason": "freeze"})
        assert paused.status_code == 202, paused.text
        assert paused.json()["status_id"] == STATUS_ID
        wait_for(lambda: schedule_status(topics, "PAUSED", 1), what="PAUSED")
        wait_for(lambda: acme.get(f"/api/v1/jobs/{STATUS_ID}").json().get("state") == "PAUSED",
                 what="PAUSED in the views")  # fmt: skip
        refused = acme.post(f"/api/v1/workflows/{WORKFLOW}/trigger")
        assert (refused.status_code, refused.json()["field"]) == (409, "workflow_id")
        client.trigger_workflow(OWNER, WORKFLOW)  # past the API: the timers ignore it

        bad = acme.patch(
            f"/api/v1/workflows/{WORKFLOW}",
            json={"steps": [{"name": "b", "job_type": "Not A Type"}]},
        )
        assert (bad.status_code, bad.json()["field"]) == (422, "steps.0.spec.job_type")
        updated = acme.patch(f"/api/v1/workflows/{WORKFLOW}", json={"steps": [step("b")]})
        assert updated.status_code == 202, updated.text
        client.resume_workflow(OWNER, WORKFLOW, requested_by="tests")
        wait_for(lambda: schedule_status(topics, "SCHEDULED", 1), what="resumed")
        client.trigger_workflow(OWNER, WORKFLOW, requested_by="tests")
        second = wait_for(lambda: schedule_status(topics, "SCHEDULED", 2), timeout_s=40,
                          what="the second run ended")  # fmt: skip

    run, earlier = orjson.loads(second.result or ""), orjson.loads(first.result or "")
    assert run["outcome"] == "SUCCEEDED" and run["run_id"] != earlier["run_id"]
    steps = run_steps(topics)
    assert sorted((s.step, s.state.value) for s in steps) == [
        ("a", "SUCCEEDED"),
        ("b", "SUCCEEDED"),
    ], "one run before the pause, none while paused, the updated steps after it"
    assert next(s for s in steps if s.step == "b").workflow_id == run["run_id"]
    listed = wait_for(lambda: [item for item in acme.get("/api/v1/schedules").json()["items"]
                               if item["id"] == WORKFLOW and item["runs"] == 2],
                      what="the schedule listed with its runs")  # fmt: skip
    assert (listed[0]["state"], listed[0]["steps"], listed[0]["paused"]) == ("SCHEDULED", ["b"],
                                                                             False)  # fmt: skip
