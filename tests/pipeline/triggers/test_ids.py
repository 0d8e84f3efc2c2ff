"""The job id of a triggered job: the same for the same (trigger, topic, partition, offset),
different otherwise, and accepted by the timers' idempotency rule."""

from __future__ import annotations

from jobstream._pipeline.model.idempotency import idempotent_job_id, is_job_id
from jobstream._pipeline.model.rules import MAX_IDEMPOTENCY_KEY_CHARS
from jobstream._pipeline.triggers.ids import trigger_idempotency_key, trigger_job_id


def test_the_id_is_the_idempotency_key_path() -> None:
    key = trigger_idempotency_key("orders-paid", "orders", 2, 41)
    assert key == "trigger:orders-paid:orders:2:41"
    assert trigger_job_id("shop", "orders-paid", "orders", 2, 41) == idempotent_job_id("shop", key)
    assert is_job_id(trigger_job_id("shop", "orders-paid", "orders", 2, 41))


def test_every_coordinate_changes_the_id() -> None:
    base = ("shop", "t", "orders", 0, 7)
    ids = {trigger_job_id(*base)}
    for i, changed in enumerate(("other", "t2", "orders2", 1, 8)):
        varied = list(base)
        varied[i] = changed
        ids.add(trigger_job_id(*varied))  # type: ignore[arg-type]
    assert len(ids) == 6
    assert trigger_job_id(*base) == trigger_job_id(*base)


def test_a_long_topic_name_keeps_the_key_within_its_bound() -> None:
    topic = "t" * 249
    last = 2**63 - 1  # the largest offset Kafka gives
    key = trigger_idempotency_key("n" * 100, topic, 99_999, last)
    assert len(key) <= MAX_IDEMPOTENCY_KEY_CHARS
    assert key != trigger_idempotency_key("n" * 100, topic[:-1] + "u", 99_999, last)
    assert key != trigger_idempotency_key("n" * 99 + "m", topic, 99_999, last)
