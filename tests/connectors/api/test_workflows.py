"""Contract test of GET /api/v1/workflows/{id} against the real service and broker: a
workflow's jobs, parents first, with their step names, states and parents; another
owner's workflow is 404, and another owner's workflow of the same id is another workflow."""

from __future__ import annotations

import httpx

from jobstream._pipeline.model.idempotency import idempotent_job_id
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


def test_two_owners_naming_one_workflow_id_get_two_workflows(
    acme: httpx.Client, bolt: httpx.Client, admin: httpx.Client
) -> None:
    body = {"workflow_id": "payroll-2026", "steps": DIAMOND[:2]}
    ours, theirs = acme.post("/api/v1/workflows", json=body), bolt.post("/api/v1/workflows",
                                                                        json=body)  # fmt: skip
    assert (ours.status_code, theirs.status_code) == (201, 201), (ours.text, theirs.text)
    assert theirs.json()["created"] is True
    assert set(ours.json()["job_ids"].values()).isdisjoint(theirs.json()["job_ids"].values())
    again = acme.post("/api/v1/workflows", json=body)
    assert (again.status_code, again.json()["created"]) == (200, False), "the same owner's"
    assert again.json()["job_ids"] == ours.json()["job_ids"]

    def read(client: httpx.Client, path: str = "/api/v1/workflows/payroll-2026") -> object:
        answer = client.get(path)
        return answer.json() if answer.status_code == 200 and len(answer.json()["steps"]) == 2 \
            else None

    assert wait_for(lambda: read(acme), what="acme's workflow")["owner"] == "acme"
    mine = wait_for(lambda: read(bolt), what="bolt's workflow")
    assert mine["owner"] == "bolt"
    assert {s["job_id"] for s in mine["steps"]} == set(theirs.json()["job_ids"].values())
    ambiguous = admin.get("/api/v1/workflows/payroll-2026")
    assert ambiguous.status_code == 422 and ambiguous.json()["field"] == "owner"
    named = admin.get("/api/v1/workflows/payroll-2026?owner=bolt")
    assert named.status_code == 200 and named.json()["owner"] == "bolt"

    # A job of bolt's naming a step of acme's workflow as its parent: refused, as is one
    # naming a job nobody has (the same words: nothing tells which it was).
    parent = ours.json()["job_ids"]["a"]
    for depends_on in ([parent], ["01ARZ3NDEKTSV4RRFFQ69G5FAV"]):
        attach = bolt.post("/api/v1/jobs", json={"job_type": "data.process",
                                                  "workflow_id": "payroll-2026",
                                                  "depends_on": depends_on})  # fmt: skip
        assert attach.status_code == 422, attach.text
        assert attach.json()["field"] == "spec.depends_on.0"
        assert "is not a job of bolt's workflow payroll-2026" in attach.json()["detail"]
    own = acme.post("/api/v1/jobs", json={"job_type": "data.process",
                                           "workflow_id": "payroll-2026",
                                           "depends_on": [parent]})  # fmt: skip
    assert own.status_code == 201, own.text
    first = idempotent_job_id("bolt", "late-first")
    batch = bolt.post("/api/v1/jobs/batch", json={"jobs": [
        {"idempotency_key": "late-first", "job_type": "data.process", "workflow_id": "late"},
        {"job_type": "data.process", "workflow_id": "late", "depends_on": [first]},
    ]})  # fmt: skip
    assert batch.status_code == 201, "a parent earlier in the same batch counts"
