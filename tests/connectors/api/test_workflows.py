"""Contract test of GET /api/v1/workflows/{id} against the real service and broker: a
workflow's jobs, parents first, with their step names, states and parents; another
owner's workflow is 404."""

from __future__ import annotations

import httpx

from tests.support.waiting import wait_for

DIAMOND = [
    {"name": "a", "job_type": "data.process"},
    {"name": "b", "job_type": "data.process", "depends_on": ["a"]},
    {"name": "c", "job_type": "report.generate", "depends_on": ["a"]},
    {"name": "d", "job_type": "data.process", "depends_on": ["b", "c"]},
]


def test_a_workflow_read_gives_its_steps_parents_first_to_its_owner_only(
    acme: httpx.Client, bolt: httpx.Client, admin: httpx.Client
) -> None:
    # d first in the body: the answer is in topological order whatever the submission's.
    reply = acme.post("/api/v1/workflows", json={"steps": DIAMOND[::-1]})
    assert reply.status_code == 201, reply.text
    workflow_id, ids = reply.json()["workflow_id"], reply.json()["job_ids"]

    def held() -> dict[str, object] | None:
        answer = acme.get(f"/api/v1/workflows/{workflow_id}")
        return (
            answer.json()
            if answer.status_code == 200 and len(answer.json()["steps"]) == 4
            else None
        )

    body = wait_for(held, what="the workflow's four jobs in the views")
    assert body["workflow_id"] == workflow_id and body["owner"] == "acme"
    steps = {step["step"]: step for step in body["steps"]}
    assert {name: step["job_id"] for name, step in steps.items()} == ids
    assert sorted(steps["d"]["depends_on"]) == sorted([ids["b"], ids["c"]])
    assert steps["b"]["depends_on"] == [ids["a"]] and steps["a"]["depends_on"] == []
    assert steps["c"]["job_type"] == "report.generate"
    assert all(step["state"] == "SUBMITTED" for step in body["steps"])  # no timers here
    order = [step["step"] for step in body["steps"]]
    assert order[0] == "a" and order[-1] == "d"
    job = acme.get(f"/api/v1/jobs/{ids['d']}").json()
    assert job["step"] == "d" and sorted(job["depends_on"]) == sorted([ids["b"], ids["c"]])
    assert admin.get(f"/api/v1/workflows/{workflow_id}").json() == body
    hidden = bolt.get(f"/api/v1/workflows/{workflow_id}")
    assert hidden.status_code == 404 and hidden.json()["field"] == "workflow_id"
    assert acme.get("/api/v1/workflows/no-such-workflow").status_code == 404
