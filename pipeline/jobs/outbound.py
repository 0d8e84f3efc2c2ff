"""What both Python clients send to jobs.intake, and what a refused send raises.

:class:`~jobstream._pipeline.jobs.client.JobClient` (librdkafka) and
:class:`~jobstream._pipeline.jobs.aio.AsyncJobClient` (aiokafka) differ only in how they
wait for the broker. The events themselves are built and checked by the job model
(:meth:`JobRequest.to_event`, :func:`workflow_event`, :mod:`jobstream._pipeline.model.commands`);
here is the rest they share: a call's records keyed and named, the submissions a call
returns, and the one error a batch with unacknowledged records becomes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaError

from jobstream._pipeline import tenancy
from jobstream._pipeline.config import Settings
from jobstream._pipeline.errors import AuthorizationError, JobstreamError, ValidationError
from jobstream._pipeline.kafka.denied import denied
from jobstream._pipeline.model.job import JobRequest
from jobstream._pipeline.model.records import (
    WorkflowCancelled,
    WorkflowSignalled,
    WorkflowSubmitted,
)
from jobstream._pipeline.serde import Event
from jobstream._pipeline.topics import Topics
from jobstream._pipeline.workflows.commands import step_ids

NOT_RETRYABLE = frozenset({
    KafkaError.MSG_SIZE_TOO_LARGE,
    KafkaError.INVALID_MSG_SIZE,
    KafkaError.TOPIC_AUTHORIZATION_FAILED,
    KafkaError.CLUSTER_AUTHORIZATION_FAILED,
    KafkaError._INVALID_ARG,
})  # fmt: skip
"""Codes of a failure that sending again cannot mend. The broker's codes are Kafka's
protocol error numbers, which librdkafka and aiokafka (``errno``) both report."""


class SubmissionError(JobstreamError):
    """Records the broker did not acknowledge; ``job_ids`` names the jobs affected.

    Retrying is safe for jobs with an idempotency key (the same id is deduplicated);
    without one, a record that was in fact written before the failure runs twice.
    """

    def __init__(self, topic: str, reason: str, job_ids: list[str], *, retryable: bool) -> None:
        shown = ", ".join(job_ids[:5]) + (
            f" and {len(job_ids) - 5} more" if len(job_ids) > 5 else ""
        )
        super().__init__(f"{topic}: {reason}" + (f" (job ids {shown})" if job_ids else ""))
        self.topic = topic
        self.job_ids = job_ids
        self.retryable = retryable


@dataclass(frozen=True)
class WorkflowSubmission:
    """A workflow the broker has acknowledged."""

    workflow_id: str
    steps: dict[str, str]
    """Step name -> job id, in submission order."""


@dataclass(frozen=True, slots=True)
class Outgoing:
    """One record of a call, ready for a producer."""

    job_id: str
    """What names the record in a refusal: its job id, or a workflow's id."""
    key: bytes
    value: bytes


@dataclass(frozen=True, slots=True)
class Failure:
    """A record the broker (or the producer) refused."""

    job_id: str
    code: int | None
    """Kafka's error code, when the client gave one."""
    reason: str


def names_of(event: Event) -> tuple[str, str | None]:
    """The id a record is named by (in refusals) and the workflow id of its partition key.

    A workflow's records have no job id: they are named (and keyed) by the workflow.
    """
    record = event.data
    if isinstance(record, WorkflowSubmitted | WorkflowCancelled | WorkflowSignalled):
        return record.workflow_id, record.workflow_id
    return record.job_id, record.workflow_id


def intake_topic(settings: Settings) -> str:
    """Where a client sends: jobs.intake, or its owner's own intake topic when
    ``JOBSTREAM_INTAKE_OWNER`` names one (pipeline/tenancy.py)."""
    topics = Topics(settings)
    owner = settings.intake_owner
    return topics.intake if owner is None else topics.owner_intake(owner)


def outgoing(events: Iterable[Event], serialize: Callable[[Event, Any], bytes], *,
             owner: str | None = None) -> list[Outgoing]:  # fmt: skip
    """Each event encoded and keyed by :func:`partition_key`, in order; a debounced or
    singleton submission by its key's collapse key, where the timers decide on it
    (:func:`jobstream._pipeline.model.collapse.intake_key`). Sent through ``owner``'s door,
    a record the timers would refuse there raises ValidationError, before any is sent."""
    events = list(events)
    if owner is not None:
        for event in events:
            reason = tenancy.refusal(owner, event.data)
            if reason is not None:
                raise ValidationError("owner", f"{reason} (JOBSTREAM_INTAKE_OWNER={owner})")
    records = []
    for event in events:
        job_id, _ = names_of(event)
        records.append(Outgoing(job_id, tenancy.intake_key_of(event.data),
                                serialize(event, None)))
    return records


def request_of(request: JobRequest | None, fields: dict[str, Any]) -> JobRequest:
    """``submit``'s one job: a JobRequest, or the fields of one (checked here)."""
    if request is None:
        return JobRequest(**fields)
    if fields:
        raise TypeError("pass a JobRequest or its fields, not both")
    return request


def job_events(requests: Iterable[JobRequest], now_ms: int, *,
               principal: str | None = None) -> list[Event]:  # fmt: skip
    """``submit_many``'s records, every one checked before any is sent, naming the Kafka
    ``principal`` that submits them (when the client logs in as one)."""
    by = None if principal is None else tenancy.kafka_actor(principal)
    return [request.to_event(now_ms, submitted_by=by) for request in requests]


def workflow_submissions(events: Sequence[Event]) -> list[WorkflowSubmission]:
    """What ``submit_workflows`` returns for its WorkflowSubmitted events; a recurring
    workflow has no step ids (each run's are its own)."""
    return [WorkflowSubmission(e.data.workflow_id, {} if e.data.schedule else step_ids(e))
            for e in events]  # fmt: skip


def refusal(topic: str, failures: Sequence[Failure], sent: int, *,
            principal: str | None) -> JobstreamError:  # fmt: skip
    """The error of a send of ``sent`` records of which ``failures`` were refused: an
    AuthorizationError naming the grant when the broker wants an ACL, else a
    SubmissionError naming the jobs, retryable unless a code says otherwise."""
    for failure in failures:
        refused = authorization(topic, failure.code, principal=principal)
        if refused is not None:
            return refused
    retryable = not any(failure.code in NOT_RETRYABLE for failure in failures)
    reason = f"{len(failures)} of {sent} records not acknowledged: {failures[0].reason}"
    return SubmissionError(topic, reason, [f.job_id for f in failures], retryable=retryable)


def authorization(topic: str, code: int | None, *,
                  principal: str | None) -> AuthorizationError | None:  # fmt: skip
    """The AuthorizationError a Kafka error code stands for when writing ``topic`` (a
    producer refused at the cluster for want of any WRITE grant included), else None."""
    return None if code is None else denied(KafkaError(code), topic=topic, principal=principal)


def unacknowledged(topic: str, pending: int, waited_s: float,
                   job_ids: Sequence[str] = ()) -> SubmissionError:  # fmt: skip
    """The error of a send whose ``pending`` records had no answer within ``waited_s``."""
    return SubmissionError(topic, f"{pending} records unacknowledged after {waited_s:g} s",
                           list(job_ids), retryable=True)  # fmt: skip
