"""A trigger's definition: its rules name the field at fault; its JSON record round-trips."""

from __future__ import annotations

import pytest

from jobstream._pipeline.errors import ValidationError
from jobstream._pipeline.triggers.model import Trigger, split_id
from jobstream._pipeline.triggers.template import JobTemplate

GOOD = {"name": "orders-paid", "owner": "shop", "source": "orders", "format": "json",
        "filter": 'value.status == "paid"',
        "job": {"job_type": "order.ship", "params": {"order": "value.id", "customer": "key"},
                "labels": {"team": "ops"}}}  # fmt: skip


def with_(path: str, value: object) -> dict:
    data = {**GOOD, "job": dict(GOOD["job"])}  # type: ignore[arg-type]
    head, _, rest = path.partition(".")
    if rest:
        data[head][rest] = value
    else:
        data[head] = value
    return data


def test_a_trigger_round_trips_through_its_record() -> None:
    trigger = Trigger.from_json(GOOD)
    again = Trigger.decode(trigger.encode())
    assert again == trigger
    assert again.compiled is not None
    assert split_id(trigger.id) == ("shop", "orders-paid")
    assert trigger.label == "shop/orders-paid"


@pytest.mark.parametrize(("path", "value", "field"), [
    ("name", "has space", "name"),
    ("name", None, "name"),
    ("owner", " ", "owner"),
    ("source", "bad topic!", "source"),
    ("source", "jobs.intake", "source"),
    ("source", "prod.jobs.triggers", "source"),
    ("format", "xml", "format"),
    ("filter", "value.(", "filter"),
    ("filter", "", "filter"),
    ("job.job_type", "Bad Type", "job.job_type"),
    ("job.priority", "urgent", "job.priority"),
    ("job.params", {"order": "payload.id"}, "job.params.order"),
    ("job.params", {"h": "headers"}, "job.params.h"),
    ("job.params", {"o": "offset.x"}, "job.params.o"),
    ("job.labels", {"trigger": "x"}, "job.labels.trigger"),
    ("job.owner", "someone-else", "job.owner"),
    ("job.pass_value", "yes", "job.pass_value"),
    ("job.unknown", 1, "job.unknown"),
    ("extra", 1, "extra"),
])  # fmt: skip
def test_a_bad_definition_names_its_field(path: str, value: object, field: str) -> None:
    with pytest.raises(ValidationError) as caught:
        Trigger.from_json(with_(path, value))
    assert caught.value.field == field


def test_keys_are_handed_to_the_job_request_as_they_are() -> None:
    """``keys`` reach JobRequest(keys=...): refused naming job.keys while JobRequest has
    no such field, taken once it has."""
    from jobstream._pipeline.model.job import JobRequest

    template = JobTemplate(job_type="order.ship", keys={"concurrency": {"key": "c", "limit": 1}})
    if "keys" in JobRequest.model_fields:
        request = template.request("shop", {}, "t", "orders/0/0", None)
        assert request.keys is not None  # type: ignore[attr-defined]
    else:
        with pytest.raises(ValidationError) as caught:
            template.request("shop", {}, "t", "orders/0/0", None)
        assert caught.value.field == "job.keys"


def test_an_api_token_owner_fills_or_must_match_the_owner() -> None:
    data = {k: v for k, v in GOOD.items() if k != "owner"}
    assert Trigger.from_json(data, owner="shop").owner == "shop"
    with pytest.raises(ValidationError) as caught:
        Trigger.from_json(GOOD, owner="other")
    assert caught.value.field == "owner"
    with pytest.raises(ValidationError) as caught:
        Trigger.from_json(data)
    assert caught.value.field == "owner"


def test_a_record_that_is_not_json_is_refused_naming_the_trigger() -> None:
    with pytest.raises(ValidationError) as caught:
        Trigger.decode(b"{nope")
    assert caught.value.field == "trigger"
