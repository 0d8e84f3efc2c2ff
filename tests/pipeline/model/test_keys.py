"""A job's keys (pipeline/model/keys.py): templates filled from the job, the record they
become, and the rules that name the field at fault."""

from __future__ import annotations

from datetime import timedelta

import pytest

from jobstream._pipeline.errors import ValidationError
from jobstream._pipeline.model.job import JobRequest, validate_submitted
from jobstream._pipeline.model.keys import Keys, debounce_delay_ms, request_fields, resolve, shown
from jobstream._pipeline.model.records import DebounceKeep, JobKeys, SingletonMode, evolve

T0 = 1_798_000_000_000
PARAMS = {"customer": {"id": 42, "vip": True}, "items": ["a", "b"], "name": "x{y"}


@pytest.mark.parametrize(("template", "key"), [
    ("customer-42", "customer-42"),
    ("customer-{params.customer.id}", "customer-42"),
    ("{ params.customer.vip }", "true"),
    ("{params.items.1}/{labels.tenant}", "b/t1"),
])  # fmt: skip
def test_a_template_takes_its_paths_from_the_job(template: str, key: str) -> None:
    assert resolve(template, PARAMS, {"tenant": "t1"}) == key


@pytest.mark.parametrize(("template", "says"), [
    ("{params.nope}", "the job has no 'nope' there"),
    ("{params.customer}", "is dict, not a string or number"),
    ("{params.items.7}", "the job has no '7' there"),
    ("{secrets.x}", "is not a path"),
    ("{params.name}", "has a brace"),
])  # fmt: skip
def test_a_path_the_job_lacks_is_named(template: str, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        resolve(template, PARAMS, {})


def test_a_request_fills_its_keys_and_a_record_reads_back_the_same() -> None:
    request = JobRequest(job_type="customer.recompute", owner="acme", params=PARAMS, keys={
        "concurrency": {"key": "c-{params.customer.id}", "limit": 2},
        "rate": {"key": "api", "rate": "100/min"},
        "debounce": {"key": "d-{params.customer.id}", "window_ms": 1000, "keep": "FIRST"},
    })  # fmt: skip
    record = request.to_event(T0).data
    keys = record.spec.job_keys
    assert keys == JobKeys(concurrency_key="c-42", concurrency_limit=2, rate_key="api",
                           rate="100/min", debounce_key="d-42", debounce_window_ms=1000,
                           debounce_keep=DebounceKeep.FIRST)  # fmt: skip
    validate_submitted(record, now_ms=T0)
    assert Keys(**request_fields(keys)).record({}, {}) == keys
    assert debounce_delay_ms(keys) == 10_000
    assert shown(keys)["debounce"]["max_delay_ms"] == 10_000
    assert shown(None) == {}


@pytest.mark.parametrize(("keys", "extra", "field"), [
    ({"concurrency": {"key": "c", "limit": 0}}, {}, "spec.job_keys.concurrency.limit"),
    ({"rate": {"key": "c", "rate": "5/week"}}, {}, "spec.job_keys.rate.rate"),
    ({"debounce": {"key": "c", "window_ms": 0}}, {}, "spec.job_keys.debounce.window_ms"),
    ({"debounce": {"key": "c", "window_ms": 9, "max_delay_ms": 5}}, {}, "spec.job_keys.debounce"),
    ({"debounce": {"key": "c", "window_ms": 9}, "singleton": {"key": "c"}}, {}, "spec.job_keys"),
    ({"singleton": {"key": "c{"}}, {}, "spec.job_keys.singleton.key"),
    ({"singleton": {"key": "c"}}, {"cron": "* * * * *"}, "spec.job_keys.singleton_key"),
    ({"debounce": {"key": "c", "window_ms": 9}}, {"workflow_id": "w"},
     "spec.job_keys.debounce_key"),
])  # fmt: skip
def test_a_bad_key_is_refused_naming_its_field(keys: dict, extra: dict, field: str) -> None:
    with pytest.raises(ValidationError) as caught:
        JobRequest(job_type="a.b", owner="acme", keys=keys, **extra).to_event(T0)
    assert caught.value.field == field


def test_a_record_from_any_producer_is_held_to_the_same_rules() -> None:
    record = JobRequest(job_type="a.b", owner="acme").to_event(T0).data
    for keys, field in ((JobKeys(concurrency_key="k", concurrency_limit=0),
                         "spec.job_keys.concurrency.limit"),
                        (JobKeys(rate_key="k", rate="fast"), "spec.job_keys.rate.rate"),
                        (JobKeys(singleton_key="{params.x}",
                                 singleton_mode=SingletonMode.REPLACE),
                         "spec.job_keys.singleton.key")):  # fmt: skip
        bad = evolve(record, spec=evolve(record.spec, job_keys=keys))
        with pytest.raises(ValidationError) as caught:
            validate_submitted(bad, now_ms=T0)
        assert caught.value.field == field


def test_a_debounced_deadline_falls_after_its_window_and_a_singleton_leaves_room_for_its_label(
) -> None:
    debounced = {"debounce": {"key": "d", "window_ms": 1000, "max_delay_ms": 5000}}
    with pytest.raises(ValidationError) as caught:
        JobRequest(job_type="a.b", owner="acme", keys=debounced,
                   deadline=timedelta(seconds=5)).to_event(T0)  # fmt: skip
    assert caught.value.field == "spec.deadline_ms"
    JobRequest(job_type="a.b", owner="acme", keys=debounced,
               deadline=timedelta(seconds=6)).to_event(T0)  # fmt: skip
    with pytest.raises(ValidationError) as caught:
        JobRequest(job_type="a.b", owner="acme", labels={f"l{i}": "v" for i in range(32)},
                   keys={"singleton": {"key": "s"}}).to_event(T0)  # fmt: skip
    assert caught.value.field == "spec.labels"
