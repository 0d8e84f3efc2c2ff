"""A trigger's definition: its rules name the field at fault; its JSON record round-trips."""

from __future__ import annotations

import pytest
from confluent_kafka import Message

from jobstream._pipeline.errors import ValidationError
from jobstream._pipeline.triggers.board import TriggerBoard
from jobstream._pipeline.triggers.model import Trigger, split_id
from jobstream._pipeline.triggers.template import JobTemplate
from jobstream._pipeline.triggers.topic import apply

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


def test_keys_are_handed_to_the_job_request_and_filled_from_the_records_params() -> None:
    template = JobTemplate(job_type="order.ship",
                           keys={"concurrency": {"key": "order-{params.order}", "limit": 1}})
    request = template.request("shop", {"order": 7}, "t", "orders/0/0", None)
    assert request.to_event(1_798_000_000_000).data.spec.job_keys.concurrency_key == "order-7"
    with pytest.raises(ValidationError) as caught:
        template.request("shop", {}, "t", "orders/0/0", None).to_event(1_798_000_000_000)
    assert caught.value.field == "spec.job_keys"


def test_a_record_keyed_other_than_by_its_trigger_is_skipped() -> None:
    trigger = Trigger.from_json({"name": "paid", "source": "orders",
                                 "job": {"job_type": "order.ship"}}, owner="shop")  # fmt: skip
    board = TriggerBoard()
    apply(board, Message(topic="jobs.triggers", key=b"other\x00paid", value=trigger.encode()))
    assert board.snapshot.triggers == {}
    apply(board, Message(topic="jobs.triggers", key=trigger.id.encode(), value=trigger.encode()))
    assert list(board.snapshot.triggers) == [trigger.id]
    apply(board, Message(topic="jobs.triggers", key=trigger.id.encode(), value=None))
    assert board.snapshot.triggers == {}


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
