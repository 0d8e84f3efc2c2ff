"""The Python client: submit jobs and send commands to jobs.intake.

Every method returns only once the broker has acknowledged its records (``acks=all``,
idempotent producer), so a returned job id is a job that will not be lost. ``submit_many``
validates every request first, then produces them all and waits once: a bad request
leaves nothing half-sent, and a large batch costs one round of acknowledgements instead
of one per job.

Records are keyed by :func:`jobstream._pipeline.partitioning.partition_key` and partitioned with
``murmur2_random``, the hash of Kafka's Java client, so that a job submitted here and its
cancel sent by any other client (kcat, Java, Go, :class:`AsyncJobClient`) meet on the same
partition. What builds the records and the errors is shared with the asyncio client
(:mod:`jobstream._pipeline.jobs.outbound`); this module only produces and waits.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from types import TracebackType
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Message

from jobstream._pipeline.clock import now_ms
from jobstream._pipeline.config import Settings
from jobstream._pipeline.jobs.outbound import (
    Failure,
    SubmissionError,
    WorkflowSubmission,
    intake_topic,
    job_events,
    outgoing,
    refusal,
    request_of,
    unacknowledged,
    workflow_submissions,
)
from jobstream._pipeline.kafka import clients
from jobstream._pipeline.model import commands
from jobstream._pipeline.model.held import signal_event
from jobstream._pipeline.model.job import JobRequest
from jobstream._pipeline.scheduling import CronSpec
from jobstream._pipeline.serde import Event, make_serde
from jobstream._pipeline.workflows import schedule_commands
from jobstream._pipeline.workflows.commands import workflow_event

__all__ = ["JobClient", "SubmissionError", "WorkflowSubmission"]

logger = logging.getLogger(__name__)


def _on_delivery(failures: list[Failure], job_id: str, err: KafkaError | None,
                 _msg: Message) -> None:  # fmt: skip
    if err is not None:
        failures.append(Failure(job_id, err.code(), err.str()))


class JobClient:
    """Submits jobs and commands to jobs.intake; one producer, safe to share between threads.

    ``delivery_timeout_s`` bounds how long a record may wait for the broker (librdkafka
    ``message.timeout.ms``): a submission fails with SubmissionError rather than hang when
    the broker or the topic is missing.
    """

    def __init__(self, settings: Settings, *, delivery_timeout_s: float = 30.0) -> None:
        self.topic = intake_topic(settings)
        self._owner = settings.intake_owner
        self._principal = settings.sasl_username
        self._serialize, _ = make_serde(settings.schema_registry_url)
        self._timeout_s = delivery_timeout_s
        self._producer = clients.producer(
            settings, client_id="jobstream.client",
            **{"message.timeout.ms": int(delivery_timeout_s * 1000)},
        )

    def submit(self, request: JobRequest | None = None, /, **fields: Any) -> str:
        """Submit one job, given as a JobRequest or as its fields; returns its job id.

        Raises ValidationError (before anything is sent), SubmissionError, or
        AuthorizationError when this principal may not write jobs.intake.
        """
        return self.submit_many([request_of(request, fields)])[0]

    def submit_many(self, requests: Iterable[JobRequest]) -> list[str]:
        """Submit jobs in one batch; their ids in order, once the broker has them all."""
        events = job_events(requests, now_ms(), principal=self._principal)
        self._send(events)
        return [event.data.job_id for event in events]

    def submit_workflow(self, steps: Iterable[Mapping[str, Any]], *, owner: str,
                        workflow_id: str | None = None, idempotency_key: str | None = None,
                        schedule: CronSpec | Mapping[str, Any] | str | None = None,
                        ) -> WorkflowSubmission:  # fmt: skip
        """Submit a workflow as one record: all its steps run, or (one rule broken) none.

        A step is a mapping of ``name``, ``depends_on`` (names of other steps),
        ``on_parent_failure`` and the other fields of :class:`JobRequest` but the owner.
        Raises ValidationError naming ``steps.<i>.<field>`` (a cycle: ``steps``) before
        anything is sent. With an idempotency key, a resubmission is the same workflow.
        With a ``schedule`` (a CronSpec, its fields, or an expression read in UTC) the
        workflow is recurring: each time of it starts a new run of the steps, and no run
        starts while the previous one runs unless the schedule says ``overlap: ALLOW``;
        the submission then has no step ids (each run's are its own).
        """
        event = workflow_event(owner, steps, now_ms=now_ms(), workflow_id=workflow_id,
                               idempotency_key=idempotency_key, schedule=schedule)  # fmt: skip
        return self.submit_workflows([event])[0]

    def submit_workflows(self, events: Sequence[Event]) -> list[WorkflowSubmission]:
        """Submit WorkflowSubmitted records built by :func:`workflow_event` in one batch."""
        self._send(list(events))
        return workflow_submissions(events)

    def cancel_workflow(self, owner: str, workflow_id: str, *, reason: str | None = None,
                        requested_by: str | None = None) -> None:  # fmt: skip
        """Cancel every job of ``owner``'s workflow that has not ended, running ones too."""
        self._send([commands.cancel_workflow_event(owner, workflow_id, reason, now_ms=now_ms(),
                                                   requested_by=requested_by)])  # fmt: skip

    def signal(self, owner: str, workflow_id: str, name: str, payload: Any = None, *,
               reject: bool = False, step: str | None = None, reason: str | None = None,
               requested_by: str | None = None) -> None:  # fmt: skip
        """Send the signal ``name`` to ``owner``'s workflow: it ends every step waiting for
        it (a ``wait`` step), SUCCEEDED with ``payload`` (any JSON value) as its result, or
        CANCELLED with ``reject``; no step waits yet: it is kept for the first that will.
        ``step`` addresses one step by name (an approval) and is not kept."""
        self._send([signal_event(owner, workflow_id, name, payload, now_ms=now_ms(),
                                 reject=reject, step=step, reason=reason,
                                 requested_by=requested_by)])  # fmt: skip

    def pause_workflow(self, owner: str, workflow_id: str, *, requested_by: str | None = None,
                       reason: str | None = None) -> None:  # fmt: skip
        """Start no run of ``owner``'s recurring workflow until :meth:`resume_workflow` (the
        runs started go on)."""
        self._send([schedule_commands.pause_workflow_event(
            owner, workflow_id, now_ms=now_ms(), requested_by=requested_by, reason=reason)])

    def resume_workflow(self, owner: str, workflow_id: str, *, requested_by: str | None = None,
                        reason: str | None = None) -> None:  # fmt: skip
        """Let a paused recurring workflow run again, from its next time after now."""
        self._send([schedule_commands.resume_workflow_event(
            owner, workflow_id, now_ms=now_ms(), requested_by=requested_by, reason=reason)])

    def trigger_workflow(self, owner: str, workflow_id: str, *, requested_by: str | None = None,
                         reason: str | None = None) -> None:  # fmt: skip
        """Start a run of a recurring workflow now; its schedule keeps its times."""
        self._send([schedule_commands.trigger_workflow_event(
            owner, workflow_id, now_ms=now_ms(), requested_by=requested_by, reason=reason)])

    def update_workflow(self, owner: str, workflow_id: str, *,
                        schedule: CronSpec | Mapping[str, Any] | str | None = None,
                        steps: Iterable[Mapping[str, Any]] | None = None,
                        requested_by: str | None = None, reason: str | None = None,
                        ) -> None:  # fmt: skip
        """Give a recurring workflow a new ``schedule`` and/or new ``steps`` (each as
        :meth:`submit_workflow` takes them) for the runs that start after it; ValidationError
        naming the field (``steps.<i>.<field>``, ``cron.<field>``) before anything is sent."""
        self._send([schedule_commands.update_workflow_event(
            owner, workflow_id, cron=schedule, steps=steps, now_ms=now_ms(),
            requested_by=requested_by, reason=reason)])  # fmt: skip

    def cancel(self, job_id: str, *, workflow_id: str | None = None, reason: str | None = None,
               requested_by: str | None = None) -> None:  # fmt: skip
        """Cancel a job, and stop a run of it under way; pass its workflow id if it has one
        (it is the partition key). ``requested_by`` names who asks and ``reason`` why, for
        the history, here and in every command below."""
        self._send([commands.cancel_event(job_id, workflow_id, reason, now_ms=now_ms(),
                                          requested_by=requested_by)])  # fmt: skip

    def trigger(self, job_id: str, *, workflow_id: str | None = None,
                requested_by: str | None = None, reason: str | None = None) -> None:  # fmt: skip
        """Run a scheduled job now; a recurring one keeps its schedule."""
        self._send([commands.trigger_event(job_id, workflow_id, now_ms=now_ms(),
                                           requested_by=requested_by, reason=reason)])  # fmt: skip

    def pause(self, job_id: str, *, workflow_id: str | None = None,
              requested_by: str | None = None, reason: str | None = None) -> None:  # fmt: skip
        """Stop a recurring job from firing until :meth:`resume`."""
        self._send([commands.pause_event(job_id, workflow_id, now_ms=now_ms(),
                                         requested_by=requested_by, reason=reason)])  # fmt: skip

    def resume(self, job_id: str, *, workflow_id: str | None = None,
               requested_by: str | None = None, reason: str | None = None) -> None:  # fmt: skip
        """Let a paused recurring job fire again."""
        self._send([commands.resume_event(job_id, workflow_id, now_ms=now_ms(),
                                          requested_by=requested_by, reason=reason)])  # fmt: skip

    def update_schedule(
        self,
        job_id: str,
        *,
        cron: CronSpec | Mapping[str, Any] | str | None = None,
        params: Mapping[str, Any] | str | None = None,
        workflow_id: str | None = None,
        run_at: datetime | str | int | None = None,
        requested_by: str | None = None,
        reason: str | None = None,
    ) -> None:
        """Give a recurring job a new schedule, a pending one-off job a new run time
        (``run_at``), new parameters, or parameters with either.

        ``cron`` and ``run_at`` as in
        :func:`jobstream._pipeline.model.commands.update_schedule_event`.
        """
        event = commands.update_schedule_event(job_id, cron, params, workflow_id, run_at=run_at,
                                               now_ms=now_ms(), requested_by=requested_by,
                                               reason=reason)  # fmt: skip
        self._send([event])

    def send_command(self, event: Event) -> None:
        """Send one command built (and so checked) by :mod:`jobstream._pipeline.model.commands`."""
        self._send([event])

    def _send(self, events: list[Event]) -> None:
        """Produce every event, then wait once for all acknowledgements."""
        failures: list[Failure] = []
        produce, poll = self._producer.produce, self._producer.poll
        for record in outgoing(events, self._serialize, owner=self._owner):
            callback = functools.partial(_on_delivery, failures, record.job_id)
            while True:
                try:
                    produce(self.topic, record.value, record.key, on_delivery=callback)
                    break
                except BufferError:  # local queue full: serve acknowledgements, then retry
                    poll(0.05)
                except KafkaException as exc:  # refused locally, e.g. a record too large
                    error = exc.args[0]
                    failures.append(Failure(record.job_id, error.code(), error.str()))
                    break
        pending = self._producer.flush(self._timeout_s + 5)
        if failures:
            raise refusal(self.topic, failures, len(events), principal=self._principal)
        if pending:  # message.timeout.ms should have failed them first; never assume success
            raise unacknowledged(self.topic, pending, self._timeout_s + 5)
        logger.debug("sent %d records to %s", len(events), self.topic)

    def close(self) -> None:
        """Wait for anything still in flight; the client is not used after this."""
        self._producer.flush(self._timeout_s + 5)

    def __enter__(self) -> JobClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
