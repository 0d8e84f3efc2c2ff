"""/api/v1/triggers on the real API and broker: an owner defines, reads and removes its own
triggers only; a bad definition answers 422 naming the field."""

from __future__ import annotations

import httpx

from jobstream._pipeline.config import Settings
from jobstream._pipeline.triggers.topic import read_triggers

TRIGGER = {"name": "orders-paid", "source": "orders", "filter": 'value.status == "paid"',
           "job": {"job_type": "order.ship", "params": {"order": "value.id"}}}  # fmt: skip


def test_an_owner_manages_its_own_triggers_only(acme: httpx.Client, bolt: httpx.Client,
                                                admin: httpx.Client,
                                                settings: Settings) -> None:  # fmt: skip
    created = acme.post("/api/v1/triggers", json=TRIGGER)
    assert created.status_code == 201, created.text
    assert created.json()["owner"] == "acme"
    assert [t["name"] for t in acme.get("/api/v1/triggers").json()] == ["orders-paid"]
    assert acme.get("/api/v1/triggers/orders-paid").json()["filter"] == TRIGGER["filter"]
    assert bolt.get("/api/v1/triggers").json() == []
    assert bolt.get("/api/v1/triggers/orders-paid").status_code == 404
    assert bolt.delete("/api/v1/triggers/orders-paid").status_code == 404
    assert bolt.post("/api/v1/triggers", json={**TRIGGER, "owner": "acme"}).status_code == 422
    by_admin = admin.get("/api/v1/triggers", params={"owner": "acme"}).json()
    assert by_admin[0]["name"] == "orders-paid"
    assert [t.label for t in read_triggers(settings)] == ["acme/orders-paid"]
    assert acme.delete("/api/v1/triggers/orders-paid").status_code == 204
    assert acme.get("/api/v1/triggers/orders-paid").status_code == 404


def test_a_bad_definition_answers_422_naming_the_field(acme: httpx.Client) -> None:
    for change, field in ((("filter", "value.("), "filter"),
                          (("source", "jobs.intake"), "source"),
                          (("job", {"job_type": "t", "params": {"x": "nowhere"}}), "job.params.x"),
                          (("format", "xml"), "format")):  # fmt: skip
        answer = acme.post("/api/v1/triggers", json={**TRIGGER, change[0]: change[1]})
        assert answer.status_code == 422, answer.text
        assert answer.json()["field"] == field
