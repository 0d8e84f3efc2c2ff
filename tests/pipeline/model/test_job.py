"""JobRequest, its JobSubmitted event, and validate_submitted on records from any client."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import msgspec
import orjson
import pytest

from jobstream._pipeline.clock import instant_of, ms_of
from jobstream._pipeline.errors import ValidationError
from jobstream._pipeline.model.idempotency import idempotent_job_id
from jobstream._pipeline.model.job import JobRequest, RetryPolicy, validate_submitted
from jobstream._pipeline.model.records import (
    CronSchedule,
    JobSubmitted,
    Record,
    RetryPolicyRecord,
    evolve,
    plain,
    typed,
)
from jobstream._pipeline.model.rules import (
    MAX_LABEL_NAME_CHARS,
    MAX_LABEL_VALUE_CHARS,
    MAX_LABELS,
    MAX_PARAMS_BYTES,
)
from jobstream._pipeline.scheduling import job_id_time_ms
from jobstream._pipeline.serde import AvroDeserializer, AvroSerializer, Event

NOW_MS = 1_795_000_000_000  # 2026-11-18T09:46:40Z
NOW = instant_of(NOW_MS)
DAY_MS = 86_400_000
BASE = {"job_type": "report.generate", "owner": "acme"}


def refusal(**fields: Any) -> ValidationError:
    with pytest.raises(ValidationError) as refused:
        JobRequest(**{**BASE, **fields}).to_event(NOW_MS)
    return refused.value


def params_of_size(size: int) -> dict[str, str]:
    """A params object whose compact JSON is exactly ``size`` bytes."""
    return {"x": "a" * (size - len('{"x":""}'))}


# --- refusals name the record path at fault


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"job_type": "Report Generate"}, "spec.job_type"),
        ({"job_type": "report..generate"}, "spec.job_type"),
        ({"job_type": "a" * 101}, "spec.job_type"),
        ({"job_type": None}, "spec.job_type"),
        ({"owner": ""}, "spec.owner"),
        ({"owner": "   "}, "spec.owner"),
        ({"owner": "a" * 201}, "spec.owner"),
        ({"owner": "ac\x00me"}, "spec.owner"),
        ({"params": [1, 2]}, "spec.params"),
        ({"params": "[1, 2]"}, "spec.params"),
        ({"params": "{not json"}, "spec.params"),
        ({"params": {1: "non-string key"}}, "spec.params"),
        ({"params": {"s": {1, 2}}}, "spec.params"),
        ({"priority": "urgent"}, "spec.priority"),
        ({"priority": 1}, "spec.priority"),
        ({"run_at": datetime(2026, 12, 1, 9)}, "spec.run_at_ms"),  # naive
        ({"run_at": NOW_MS}, "spec.run_at_ms"),  # a number: seconds or ms?
        ({"run_at": NOW + timedelta(days=3660)}, "spec.run_at_ms"),
        ({"run_at": NOW - timedelta(days=8)}, "spec.run_at_ms"),
        ({"run_at": NOW, "cron": "0 9 * * *"}, "spec.cron"),
        ({"cron": "0 9 * *"}, "spec.cron.expression"),
        ({"cron": "0 25 * * *"}, "spec.cron.expression"),
        ({"cron": {"expression": "0 9 * * *", "timezone": "Mars/Base"}}, "spec.cron.timezone"),
        ({"cron": {"expression": "0 9 * * *", "zone": "UTC"}}, "spec.cron.zone"),
        ({"cron": {"expression": "0 9 * * *", "misfire": "NEVER"}}, "spec.cron.misfire"),
        ({"cron": {"expression": "0 9 * * *", "end_at_ms": NOW_MS - DAY_MS}}, "spec.cron"),
        ({"depends_on": ["not-a-job-id"]}, "spec.depends_on.0"),
        ({"depends_on": ["01JD3W6Q8Z5X7M2K4N9P0R1S2T"] * 2}, "spec.depends_on"),
        ({"retry": {"max_attempts": 0}}, "spec.retry.max_attempts"),
        ({"retry": {"initial_backoff_ms": 0}}, "spec.retry.initial_backoff_ms"),
        ({"retry": {"backoff_coefficient": 0.5}}, "spec.retry.backoff_coefficient"),
        (
            {"retry": {"initial_backoff_ms": 5000, "max_backoff_ms": 4999}},
            "spec.retry.max_backoff_ms",
        ),
        ({"retry": {"jitter": 1.5}}, "spec.retry.jitter"),
        ({"retry": {"jitter": -0.1}}, "spec.retry.jitter"),
        ({"retry": {"jitter": float("nan")}}, "spec.retry.jitter"),
        ({"retry": {"non_retryable_errors": "ValueError"}}, "spec.retry.non_retryable_errors"),
        ({"retry": {"attempts": 3}}, "spec.retry.attempts"),
        ({"timeout_ms": 0}, "spec.timeout_ms"),
        ({"timeout_ms": 2**63}, "spec.timeout_ms"),
        ({"idempotency_key": ""}, "idempotency_key"),
        ({"idempotency_key": "k" * 201}, "idempotency_key"),
        ({"workflow_id": ""}, "workflow_id"),
        ({"workflow_id": "a/b"}, "workflow_id"),
        ({"workflow_id": "wf\x00"}, "workflow_id"),
        ({"workflow_id": "wf\n1"}, "workflow_id"),
        ({"workflow_id": "wf 1"}, "workflow_id"),
        ({"workflow_id": "wf..1"}, "workflow_id"),
        ({"labels": {"team": 7}}, "spec.labels.team"),
        ({"labels": {"a=b": "c"}}, "spec.labels"),
        ({"labels": {"": "c"}}, "spec.labels"),
        ({"labels": {"team": "red\x00"}}, "spec.labels"),
        ({"labels": {f"l{i}": "v" for i in range(MAX_LABELS + 1)}}, "spec.labels"),
        ({"labels": {"n" * (MAX_LABEL_NAME_CHARS + 1): "v"}}, "spec.labels"),
        ({"labels": {"team": "v" * (MAX_LABEL_VALUE_CHARS + 1)}}, "spec.labels"),
        ({"params": {"x": float("nan")}}, "spec.params"),
        ({"params": {"x": [1.0, {"y": float("inf")}]}}, "spec.params"),
        ({"params": {"x": -float("inf")}}, "spec.params"),
        ({"colour": "blue"}, "colour"),
    ],
)
def test_each_refusal_names_its_field(fields: dict[str, Any], field: str) -> None:
    assert refusal(**fields).field == field


def test_missing_required_fields_are_named() -> None:
    with pytest.raises(ValidationError) as refused:
        JobRequest(owner="acme")  # type: ignore[call-arg]
    assert (refused.value.field, refused.value.message) == ("spec.job_type", "is required")


def test_params_limit_is_one_megabyte_of_json() -> None:
    at_limit = params_of_size(MAX_PARAMS_BYTES)
    event = JobRequest(**BASE, params=at_limit).to_event(NOW_MS)
    assert len(event.data.spec.params.encode()) == MAX_PARAMS_BYTES

    over = refusal(params=params_of_size(MAX_PARAMS_BYTES + 1))
    assert over.field == "spec.params"
    assert str(MAX_PARAMS_BYTES) in over.message
    # Text is measured as given, before it is parsed.
    assert refusal(params=" " * MAX_PARAMS_BYTES + "{}").field == "spec.params"


def test_params_given_as_text_or_mapping_give_the_same_event() -> None:
    as_text = JobRequest(**BASE, params='{"month": "2026-11", "n": 3}', idempotency_key="k")
    as_dict = JobRequest(**BASE, params={"month": "2026-11", "n": 3}, idempotency_key="k")
    assert as_text.to_event(NOW_MS) == as_dict.to_event(NOW_MS)


def test_cron_refusal_message_is_cronspec_s() -> None:
    refused = refusal(cron={"expression": "0 9 * * *", "timezone": "Mars/Base"})
    assert str(refused) == "spec.cron.timezone: unknown time zone: 'Mars/Base'"


def test_a_cron_mapping_without_its_expression_is_refused_naming_it() -> None:
    assert refusal(cron={"timezone": "UTC"}).field == "spec.cron.expression"


def test_priority_is_case_insensitive() -> None:
    assert JobRequest(**BASE, priority="High").priority == "HIGH"
    assert JobRequest(**BASE, priority="low").to_event(NOW_MS).data.spec.priority == "LOW"


def test_retry_policy_on_its_own_names_its_field_and_in_a_job_the_record_path() -> None:
    with pytest.raises(ValidationError) as refused:
        RetryPolicy(max_attempts=0)
    assert refused.value.field == "retry.max_attempts"
    assert refusal(retry={"max_attempts": 0}).field == "spec.retry.max_attempts"
    assert RetryPolicy(max_attempts=1, initial_backoff_ms=10, max_backoff_ms=10).max_attempts == 1


# --- the event


def test_to_event_builds_a_full_job_submitted() -> None:
    request = JobRequest(
        **BASE,
        params={"report": "sales"},
        priority="high",
        run_at=NOW + timedelta(hours=1),
        depends_on=["01JD3W6Q8Z5X7M2K4N9P0R1S2T"],
        on_parent_failure="run",
        retry={"max_attempts": 5, "non_retryable_errors": ["KeyError"]},
        timeout_ms=60_000,
        workflow_id="wf-1",
        labels={"team": "finance"},
    )
    event = request.to_event(NOW_MS)
    assert event.name == "JobSubmitted"
    data = event.data
    assert job_id_time_ms(data["job_id"]) == NOW_MS
    assert data["submitted_at_ms"] == NOW_MS
    assert (data["workflow_id"], data["idempotency_key"]) == ("wf-1", None)
    spec = data["spec"]
    assert spec["params"] == '{"report":"sales"}'
    assert spec["priority"] == "HIGH"
    assert spec["run_at_ms"] == NOW_MS + 3_600_000
    assert spec["on_parent_failure"] == "RUN"
    assert spec["retry"]["max_attempts"] == 5
    assert spec["retry"]["non_retryable_errors"] == ["KeyError"]
    assert spec["retry"]["max_backoff_ms"] == 300_000  # the Avro default
    assert spec["depends_on"] == ["01JD3W6Q8Z5X7M2K4N9P0R1S2T"]
    assert (spec["timeout_ms"], spec["labels"]) == (60_000, {"team": "finance"})


def test_run_at_becomes_epoch_ms_and_may_be_a_little_in_the_past() -> None:
    soon = JobRequest(**BASE, run_at="2026-11-18T10:00:00.123+01:00").to_event(NOW_MS)
    expected = ms_of(datetime(2026, 11, 18, 9, 0, 0, 123_000, tzinfo=UTC))
    assert soon.data.spec.run_at_ms == expected
    late = JobRequest(**BASE, run_at=NOW - timedelta(days=6)).to_event(NOW_MS)
    assert late.data.spec.run_at_ms == NOW_MS - 6 * DAY_MS


def test_idempotency_key_makes_the_id_deterministic() -> None:
    request = JobRequest(**BASE, idempotency_key="nightly-2026-11-18")
    first, again = request.to_event(NOW_MS), request.to_event(NOW_MS + 5000)
    assert (
        first.data.job_id
        == again.data.job_id
        == idempotent_job_id("acme", "nightly-2026-11-18")
    )
    assert (
        JobRequest(**BASE).to_event(NOW_MS).data.job_id
        != JobRequest(**BASE).to_event(NOW_MS).data.job_id
    )


def test_to_event_round_trips_through_the_avro_serde() -> None:
    serialize, deserialize = AvroSerializer(validate=True), AvroDeserializer()
    for request in (
        JobRequest(**BASE),
        JobRequest(**BASE, params={"n": [1, 2.5, None]}, run_at=NOW + timedelta(hours=1)),
        JobRequest(**BASE, cron="*/5 * * * *", retry={}, idempotency_key="k", workflow_id="w"),
    ):
        event = request.to_event(NOW_MS)
        assert deserialize(serialize(event)) == event


# --- validate_submitted


def good_records() -> list[JobSubmitted]:
    requests = [
        JobRequest(**BASE),
        JobRequest(**BASE, run_at=NOW + timedelta(days=30), priority="low", timeout_ms=1),
        JobRequest(**BASE, cron={"expression": "0 9 * * MON-FRI", "timezone": "Europe/Paris"}),
        JobRequest(**BASE, idempotency_key="k-1", workflow_id="wf", retry={"max_attempts": 1}),
        JobRequest(
            **BASE, depends_on=["01JD3W6Q8Z5X7M2K4N9P0R1S2T"], labels={"a": "b"}, workflow_id="wf"
        ),
        JobRequest(**BASE, deadline=timedelta(hours=1), queue_limit_ms=30_000),
    ]
    return [request.to_event(NOW_MS).data for request in requests]


def test_validate_submitted_accepts_what_to_event_builds() -> None:
    deserialize, serialize = AvroDeserializer(), AvroSerializer()
    for record in good_records():
        validate_submitted(record, now_ms=NOW_MS)
        decoded = deserialize(serialize(Event("JobSubmitted", record))).data
        validate_submitted(decoded, now_ms=NOW_MS)


def test_validate_submitted_is_unaffected_by_replay_much_later() -> None:
    """Rebuilding timer state from jobs.intake weeks later accepts the same records."""
    for record in good_records():
        validate_submitted(record, now_ms=NOW_MS + 60 * DAY_MS)


def edit(path: str, value: Any, record: Record | None = None) -> Any:
    """A good record (by default a one-off one) with one field (a dotted path) replaced.

    The value is not checked against the field's type: a record from any client may hold
    any value its schema allows, and the rules must refuse the bad ones.
    """
    record = good_records()[1] if record is None else record
    head, _, rest = path.partition(".")
    return evolve(record, **{head: edit(rest, value, getattr(record, head)) if rest else value})


@pytest.mark.parametrize(
    ("path", "value", "field"),
    [
        ("job_id", "not-a-job-id", "job_id"),
        ("job_id", "01jd3w6q8z5x7m2k4n9p0r1s2t", "job_id"),
        ("submitted_at_ms", NOW_MS // 1000, "submitted_at_ms"),  # seconds
        ("submitted_at_ms", NOW_MS * 1000, "submitted_at_ms"),  # microseconds
        ("spec.job_type", "Report", "spec.job_type"),
        ("spec.owner", "", "spec.owner"),
        ("spec.params", "[1]", "spec.params"),
        ("spec.params", '"text"', "spec.params"),
        ("spec.params", "{", "spec.params"),
        ("spec.params", '{"x":"' + "a" * MAX_PARAMS_BYTES + '"}', "spec.params"),
        ("spec.priority", "URGENT", "spec.priority"),
        ("spec.run_at_ms", NOW_MS - 8 * DAY_MS, "spec.run_at_ms"),
        ("spec.run_at_ms", (NOW_MS + 30 * DAY_MS) * 1000, "spec.run_at_ms"),
        ("spec.cron", CronSchedule(expression="0 9 * * *"), "spec.cron"),  # with run_at_ms
        ("spec.depends_on", ["nope"], "spec.depends_on.0"),
        ("spec.retry", RetryPolicyRecord(max_attempts=0), "spec.retry.max_attempts"),
        ("spec.timeout_ms", -1, "spec.timeout_ms"),
        ("spec.deadline_ms", NOW_MS + DAY_MS, "spec.deadline_ms"),  # before its run_at
        ("spec.deadline_ms", NOW_MS, "spec.deadline_ms"),  # at the submission
        ("spec.queue_limit_ms", 0, "spec.queue_limit_ms"),
        ("spec.labels", {"k": None}, "spec.labels.k"),
        ("idempotency_key", "", "idempotency_key"),
        ("workflow_id", "w" * 201, "workflow_id"),
    ],
)
def test_validate_submitted_refuses_naming_the_field(path: str, value: Any, field: str) -> None:
    with pytest.raises(ValidationError) as refused:
        validate_submitted(edit(path, value), now_ms=NOW_MS)
    assert refused.value.field == field


def test_a_known_spec_still_has_its_params_checked_and_words_the_error_alike() -> None:
    """validate_submitted remembers specs that passed; their parameters are still checked."""
    record = good_records()[1]
    validate_submitted(record, now_ms=NOW_MS)  # the spec is known from here on
    other = evolve(record.spec, params='{"other": 2}', run_at_ms=NOW_MS + 1)
    validate_submitted(evolve(record, spec=other), now_ms=NOW_MS)
    bad = edit("spec.params", "[1]", record)
    with pytest.raises(ValidationError) as refused:
        validate_submitted(bad, now_ms=NOW_MS)
    with pytest.raises(ValidationError) as cold:
        JobRequest(**{**BASE, "params": "[1]"})
    assert (refused.value.field, refused.value.message) == (cold.value.field, cold.value.message)
    with pytest.raises(ValidationError, match="run_at"):  # a known spec, now with a cron too
        validate_submitted(edit("spec.cron", CronSchedule(expression="0 9 * * *"), record),
                           now_ms=NOW_MS)  # fmt: skip


@pytest.mark.parametrize(("path", "value"), [("submitted_at_ms", None), ("spec", None)])
def test_a_record_missing_its_required_parts_is_refused_when_decoded(path: str,
                                                                     value: Any) -> None:
    """The checks of a record's shape are its decoding's: validate_submitted never sees one
    without a spec or a submission time."""
    record = plain(good_records()[1])
    record[path] = value
    with pytest.raises(msgspec.ValidationError, match=f"at `\\$.{path}`"):
        typed("JobSubmitted", record)


def test_validate_submitted_cron_fields_are_named() -> None:
    cron = good_records()[2]
    for name, value, field in [
        ("timezone", "Mars/Base", "spec.cron.timezone"),
        ("expression", "61 * * * *", "spec.cron.expression"),
        ("end_at_ms", NOW_MS - 2 * DAY_MS, "spec.cron.end_at_ms"),  # before start_at_ms
        ("jitter_ms", -5, "spec.cron.jitter_ms"),
    ]:
        record = edit(f"spec.cron.{name}", value, cron)
        if name == "end_at_ms":
            record = edit("spec.cron.start_at_ms", NOW_MS - DAY_MS, record)
        with pytest.raises(ValidationError) as refused:
            validate_submitted(record, now_ms=NOW_MS)
        assert refused.value.field == field, name


def test_validate_submitted_refuses_a_schedule_that_never_runs_again() -> None:
    record = edit("spec.cron.end_at_ms", NOW_MS - DAY_MS, good_records()[2])
    with pytest.raises(ValidationError) as refused:
        validate_submitted(record, now_ms=NOW_MS)
    assert refused.value.field == "spec.cron"


def test_validate_submitted_refuses_run_at_with_cron() -> None:
    record = edit("spec.run_at_ms", NOW_MS + DAY_MS, good_records()[2])
    with pytest.raises(ValidationError) as refused:
        validate_submitted(record, now_ms=NOW_MS)
    assert refused.value.field == "spec.cron"


def test_validate_submitted_refuses_an_id_that_does_not_match_the_key() -> None:
    # a ULID: the key would dedupe nothing
    record = edit("job_id", "01JD3W6Q8Z5X7M2K4N9P0R1S2T", good_records()[3])
    with pytest.raises(ValidationError) as refused:
        validate_submitted(record, now_ms=NOW_MS)
    assert refused.value.field == "job_id"
    assert idempotent_job_id("acme", "k-1") in refused.value.message


def test_validate_submitted_refuses_a_job_depending_on_itself() -> None:
    record = good_records()[4]
    record = edit("spec.depends_on", [record.job_id], record)
    with pytest.raises(ValidationError) as refused:
        validate_submitted(record, now_ms=NOW_MS)
    assert refused.value.field == "spec.depends_on"


def test_dependencies_need_a_workflow_and_a_one_off_job() -> None:
    parent = "01JD3W6Q8Z5X7M2K4N9P0R1S2T"
    with pytest.raises(ValidationError, match="needs a workflow_id") as refused:
        JobRequest(**BASE, depends_on=[parent]).to_event(NOW_MS)
    assert refused.value.field == "spec.depends_on"
    with pytest.raises(ValidationError, match="recurring job cannot wait") as refused:
        JobRequest(**BASE, depends_on=[parent], workflow_id="wf", cron="0 9 * * *").to_event(NOW_MS)
    assert refused.value.field == "spec.depends_on"
    with pytest.raises(ValidationError) as refused:
        JobRequest(**BASE, on_parent_failure="ignore")
    assert refused.value.field == "spec.on_parent_failure"


def test_validate_submitted_allows_some_client_clock_skew() -> None:
    record = good_records()[0]
    validate_submitted(record, now_ms=NOW_MS - 60_000)
    with pytest.raises(ValidationError) as refused:
        validate_submitted(record, now_ms=NOW_MS - 3_600_000)
    assert refused.value.field == "submitted_at_ms"


def test_limits_at_their_bound_and_workflow_ids_of_every_kind_are_accepted() -> None:
    labels = {f"{'n' * (MAX_LABEL_NAME_CHARS - 3)}{i:03}": "v=w" * (MAX_LABEL_VALUE_CHARS // 3)
              for i in range(MAX_LABELS)}  # fmt: skip
    JobRequest(**BASE, labels=labels).to_event(NOW_MS)
    for workflow_id in ("wf-1", "payroll-2026", "sales.q3_v2", "01JD3W6Q8Z5X7M2K4N9P0R1S2T"):
        assert JobRequest(**BASE, workflow_id=workflow_id).workflow_id == workflow_id


def test_finite_params_are_kept_as_sent() -> None:
    event = JobRequest(**BASE, params={"x": 1.5, "y": [0.0, -2e300]}).to_event(NOW_MS)
    assert orjson.loads(event.data.spec.params) == {"x": 1.5, "y": [0.0, -2e300]}


# --- deadlines and queue limits


def test_a_deadline_is_an_instant_or_a_duration_from_the_submission() -> None:
    def deadline_of(value: Any) -> int | None:
        spec = JobRequest(**BASE, deadline=value).to_event(NOW_MS).data.spec
        return spec.deadline_ms  # type: ignore[no-any-return]

    assert deadline_of(timedelta(minutes=30)) == NOW_MS + 1_800_000
    assert deadline_of("PT30M") == NOW_MS + 1_800_000
    assert deadline_of(NOW + timedelta(hours=1)) == NOW_MS + 3_600_000
    assert deadline_of((NOW + timedelta(hours=1)).isoformat()) == NOW_MS + 3_600_000
    assert deadline_of(None) is None
    spec = JobRequest(**BASE, queue_limit_ms=5_000).to_event(NOW_MS).data.spec
    assert (spec.queue_limit_ms, spec.deadline_ms) == (5_000, None)


@pytest.mark.parametrize(
    ("fields", "words"),
    [
        ({"deadline": 3600}, "not a number"),
        ({"deadline": "soon"}, "ISO 8601"),
        ({"deadline": datetime(2030, 1, 1)}, "ISO 8601"),  # no zone
        ({"deadline": timedelta(0)}, "positive"),
        ({"deadline": NOW - timedelta(seconds=1)}, "not after the submission"),
        ({"deadline": NOW + timedelta(days=4000)}, "after the submission"),
        ({"deadline": NOW + timedelta(hours=1), "run_at": NOW + timedelta(hours=1)},
         "not after run_at"),
        ({"deadline": timedelta(hours=1), "cron": "0 9 * * *"}, "recurring"),
    ],
)
def test_a_bad_deadline_is_refused_naming_its_field(fields: dict[str, Any], words: str) -> None:
    refused = refusal(**fields)
    assert refused.field == "spec.deadline_ms"
    assert words in refused.message


@pytest.mark.parametrize(
    ("value", "words"),
    [(0, "greater than 0"), (-5, "greater than 0"), ("soon", "integer")],
)
def test_a_bad_queue_limit_is_refused_naming_its_field(value: Any, words: str) -> None:
    refused = refusal(queue_limit_ms=value)
    assert (refused.field, words in refused.message) == ("spec.queue_limit_ms", True)
    cron = refusal(queue_limit_ms=1000, cron="0 9 * * *")
    assert (cron.field, "recurring" in cron.message) == ("spec.queue_limit_ms", True)
