"""The asyncio client: :class:`JobClient`'s calls as coroutines, on aiokafka.

For services that run an event loop (FastAPI, aiohttp): ``await client.submit(...)``
yields to the loop while the broker acknowledges, where the thread-based client would
block it. The calls take the same arguments, build the same records (the shared
:mod:`jobstream._pipeline.jobs.outbound` and the job model), return the same values and
raise the same errors: ValidationError before anything is sent, SubmissionError naming
the jobs the broker did not acknowledge, AuthorizationError for a missing ACL.

Records land where :class:`JobClient` puts them (the same key, and librdkafka's
``murmur2_random`` as aiokafka's partitioner, pipeline/kafka/aio.py), so a job submitted
by one client and a cancel sent by the other meet. Every wait on the broker (connecting,
metadata, acknowledgements) ends within ``delivery_timeout_s``. That bound is a whole
call's, every record of it: :class:`JobClient`'s is each record's (librdkafka's
``message.timeout.ms``), so a ``submit_many`` of very many records wants a longer
timeout here than there.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from itertools import zip_longest
from types import TracebackType
from typing import Any

from aiokafka import AIOKafkaProducer
from aiokafka.errors import KafkaError, MessageSizeTooLargeError

from jobstream._pipeline.clock import now_ms
from jobstream._pipeline.config import Settings
from jobstream._pipeline.errors import JobstreamError
from jobstream._pipeline.jobs.outbound import (
    Failure,
    Outgoing,
    SubmissionError,
    WorkflowSubmission,
    authorization,
    intake_topic,
    job_events,
    outgoing,
    refusal,
    request_of,
    workflow_submissions,
)
from jobstream._pipeline.kafka.aio import producer_options
from jobstream._pipeline.model import commands
from jobstream._pipeline.model.held import signal_event
from jobstream._pipeline.model.job import JobRequest
from jobstream._pipeline.scheduling import CronSpec
from jobstream._pipeline.serde import Event, make_serde
from jobstream._pipeline.workflows import schedule_commands
from jobstream._pipeline.workflows.commands import workflow_event

logger = logging.getLogger(__name__)

Ack = asyncio.Future[Any]
"""aiokafka's answer to one record: its metadata, or the error that refused it."""


class AsyncJobClient:
    """Submits jobs and commands to jobs.intake from a coroutine; one producer, shared by
    the tasks of one event loop.

    Construction checks the settings (ConfigurationError naming one aiokafka cannot
    honour) and connects nothing: the producer connects on ``async with`` or at the first
    call, in the loop that runs it. ``delivery_timeout_s`` bounds each call: connecting,
    sending and every acknowledgement.
    """

    def __init__(self, settings: Settings, *, delivery_timeout_s: float = 30.0) -> None:
        self.topic = intake_topic(settings)
        self._owner = settings.intake_owner
        self._principal = settings.sasl_username
        self._serialize, _ = make_serde(settings.schema_registry_url)
        self._timeout_s = delivery_timeout_s
        self._options = producer_options(settings, client_id="jobstream.client",
                                         request_timeout_ms=int(delivery_timeout_s * 1000))
        self._producer: AIOKafkaProducer | None = None
        self._starting = asyncio.Lock()

    async def submit(self, request: JobRequest | None = None, /, **fields: Any) -> str:
        """As :meth:`JobClient.submit`: one job, a JobRequest or its fields; its job id."""
        return (await self.submit_many([request_of(request, fields)]))[0]

    async def submit_many(self, requests: Iterable[JobRequest]) -> list[str]:
        """As :meth:`JobClient.submit_many`: every request checked, then sent at once."""
        events = job_events(requests, now_ms(), principal=self._principal)
        await self._send(events)
        return [event.data.job_id for event in events]

    async def submit_workflow(self, steps: Iterable[Mapping[str, Any]], *, owner: str,
                              workflow_id: str | None = None,
                              idempotency_key: str | None = None,
                              schedule: CronSpec | Mapping[str, Any] | str | None = None,
                              ) -> WorkflowSubmission:  # fmt: skip
        """As :meth:`JobClient.submit_workflow`: a workflow as one record."""
        event = workflow_event(owner, steps, now_ms=now_ms(), workflow_id=workflow_id,
                               idempotency_key=idempotency_key, schedule=schedule)  # fmt: skip
        return (await self.submit_workflows([event]))[0]

    async def submit_workflows(self, events: Sequence[Event]) -> list[WorkflowSubmission]:
        """As :meth:`JobClient.submit_workflows`."""
        await self._send(list(events))
        return workflow_submissions(events)

    async def cancel_workflow(self, owner: str, workflow_id: str, *, reason: str | None = None,
                              requested_by: str | None = None) -> None:  # fmt: skip
        """As :meth:`JobClient.cancel_workflow`."""
        await self.send_command(commands.cancel_workflow_event(
            owner, workflow_id, reason, now_ms=now_ms(), requested_by=requested_by))  # fmt: skip

    async def signal(self, owner: str, workflow_id: str, name: str, payload: Any = None, *,
                     reject: bool = False, step: str | None = None, reason: str | None = None,
                     requested_by: str | None = None) -> None:  # fmt: skip
        """As :meth:`JobClient.signal`."""
        await self.send_command(signal_event(
            owner, workflow_id, name, payload, now_ms=now_ms(), reject=reject, step=step,
            reason=reason, requested_by=requested_by))  # fmt: skip

    async def pause_workflow(self, owner: str, workflow_id: str, *,
                             requested_by: str | None = None,
                             reason: str | None = None) -> None:  # fmt: skip
        """As :meth:`JobClient.pause_workflow`."""
        await self.send_command(schedule_commands.pause_workflow_event(
            owner, workflow_id, now_ms=now_ms(), requested_by=requested_by, reason=reason))

    async def resume_workflow(self, owner: str, workflow_id: str, *,
                              requested_by: str | None = None,
                              reason: str | None = None) -> None:  # fmt: skip
        """As :meth:`JobClient.resume_workflow`."""
        await self.send_command(schedule_commands.resume_workflow_event(
            owner, workflow_id, now_ms=now_ms(), requested_by=requested_by, reason=reason))

    async def trigger_workflow(self, owner: str, workflow_id: str, *,
                               requested_by: str | None = None,
                               reason: str | None = None) -> None:  # fmt: skip
        """As :meth:`JobClient.trigger_workflow`."""
        await self.send_command(schedule_commands.trigger_workflow_event(
            owner, workflow_id, now_ms=now_ms(), requested_by=requested_by, reason=reason))

    async def update_workflow(self, owner: str, workflow_id: str, *,
                              schedule: CronSpec | Mapping[str, Any] | str | None = None,
                              steps: Iterable[Mapping[str, Any]] | None = None,
                              requested_by: str | None = None, reason: str | None = None,
                              ) -> None:  # fmt: skip
        """As :meth:`JobClient.update_workflow`."""
        await self.send_command(schedule_commands.update_workflow_event(
            owner, workflow_id, cron=schedule, steps=steps, now_ms=now_ms(),
            requested_by=requested_by, reason=reason))  # fmt: skip

    async def cancel(self, job_id: str, *, workflow_id: str | None = None,
                     reason: str | None = None,
                     requested_by: str | None = None) -> None:  # fmt: skip
        """As :meth:`JobClient.cancel`; pass the job's workflow id if it has one."""
        await self.send_command(commands.cancel_event(
            job_id, workflow_id, reason, now_ms=now_ms(), requested_by=requested_by))  # fmt: skip

    async def trigger(self, job_id: str, *, workflow_id: str | None = None,
                      requested_by: str | None = None, reason: str | None = None) -> None:
        """As :meth:`JobClient.trigger`."""
        await self.send_command(commands.trigger_event(
            job_id, workflow_id, now_ms=now_ms(), requested_by=requested_by,
            reason=reason))  # fmt: skip

    async def pause(self, job_id: str, *, workflow_id: str | None = None,
                    requested_by: str | None = None, reason: str | None = None) -> None:
        """As :meth:`JobClient.pause`."""
        await self.send_command(commands.pause_event(
            job_id, workflow_id, now_ms=now_ms(), requested_by=requested_by,
            reason=reason))  # fmt: skip

    async def resume(self, job_id: str, *, workflow_id: str | None = None,
                     requested_by: str | None = None, reason: str | None = None) -> None:
        """As :meth:`JobClient.resume`."""
        await self.send_command(commands.resume_event(
            job_id, workflow_id, now_ms=now_ms(), requested_by=requested_by,
            reason=reason))  # fmt: skip

    async def update_schedule(
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
        """As :meth:`JobClient.update_schedule`."""
        await self.send_command(commands.update_schedule_event(
            job_id, cron, params, workflow_id, run_at=run_at, now_ms=now_ms(),
            requested_by=requested_by, reason=reason))  # fmt: skip

    async def send_command(self, event: Event) -> None:
        """One command built (and so checked) by :mod:`jobstream._pipeline.model.commands`."""
        await self._send([event])

    async def _send(self, events: list[Event]) -> None:
        """Send every event, then wait for every acknowledgement, all within the timeout;
        a record with no answer by then counts as refused."""
        records = outgoing(events, self._serialize, owner=self._owner)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._timeout_s
        answers: list[Ack | Failure] = []  # one per record handed over, in order
        try:
            async with asyncio.timeout_at(deadline):
                await self._produce(records, answers)
        except TimeoutError:
            pass  # the records not handed over by now have no answer: refused below
        acks = [answer for answer in answers if isinstance(answer, asyncio.Future)]
        if acks:
            await asyncio.wait(acks, timeout=max(0, deadline - loop.time()))
        silent = f"no answer within {self._timeout_s:g} s"
        failures = [failure for record, answer in zip_longest(records, answers)
                    if (failure := _failure_of(record.job_id, answer, silent)) is not None]
        if failures:
            raise refusal(self.topic, failures, len(records), principal=self._principal)
        logger.debug("sent %d records to %s", len(records), self.topic)

    async def _produce(self, records: list[Outgoing], answers: list[Ack | Failure]) -> None:
        """Hand every record to the producer, connecting it first; its acknowledgement, or
        its refusal (every record's, when the producer cannot connect), goes to ``answers``."""
        try:
            producer = await self._started()
        except KafkaError as exc:
            answers.extend(_failure(r.job_id, exc) for r in records)
            return
        for index, record in enumerate(records):
            try:
                answers.append(await producer.send(self.topic, record.value, record.key))
            except MessageSizeTooLargeError as exc:  # this record's own: the others may go
                answers.append(_failure(record.job_id, exc))
            except KafkaError as exc:  # the topic's (no metadata in time, no ACL): all of them
                answers.extend(_failure(r.job_id, exc) for r in records[index:])
                return

    async def _started(self) -> AIOKafkaProducer:
        """The producer, connected on first use; tasks racing to use it share one."""
        async with self._starting:
            if self._producer is None:
                producer = AIOKafkaProducer(**self._options)
                try:
                    await producer.start()
                except BaseException:
                    with contextlib.suppress(TimeoutError):  # stopping is bounded too
                        async with asyncio.timeout(self._timeout_s):
                            await producer.stop()
                    raise
                self._producer = producer
            return self._producer

    async def close(self) -> None:
        """Wait (up to the timeout) for anything in flight, then disconnect; the client is
        not used after this."""
        producer, self._producer = self._producer, None
        if producer is None:
            return
        try:
            async with asyncio.timeout(self._timeout_s):
                await producer.stop()
        except TimeoutError:
            logger.warning("%s: records still in flight after %g s were dropped at close",
                           self.topic, self._timeout_s)  # fmt: skip

    async def __aenter__(self) -> AsyncJobClient:
        """Connects, so that a service learns at its start that the broker is not there
        (SubmissionError naming the topic, when it cannot within the timeout) or will not
        take its records (AuthorizationError)."""
        try:
            async with asyncio.timeout(self._timeout_s):
                await self._started()
        except (TimeoutError, KafkaError) as exc:
            raise _unreachable(self.topic, exc, principal=self._principal) from exc
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()


def _failure(job_id: str, error: BaseException) -> Failure:
    """One record's refusal as aiokafka reported it; a broker's error carries Kafka's code
    (``errno``), as librdkafka's does."""
    code = getattr(error, "errno", None)
    return Failure(job_id, code if isinstance(code, int) else None,
                   f"{type(error).__name__}: {error}")  # fmt: skip


def _failure_of(job_id: str, answer: Ack | Failure | None, silent: str) -> Failure | None:
    """What became of one record by the deadline: acknowledged (None), refused, or no
    answer (``silent``), whether it was never handed over (``answer`` None) or not
    acknowledged."""
    if isinstance(answer, Failure):
        return answer
    if answer is None or not answer.done():
        if answer is not None:
            answer.add_done_callback(_late_answer)
        return Failure(job_id, None, silent)
    if answer.cancelled():
        return Failure(job_id, None, "its acknowledgement was cancelled")
    error = answer.exception()
    return None if error is None else _failure(job_id, error)


def _late_answer(ack: Ack) -> None:
    """An acknowledgement that came after its call gave up: logged, so that its error is
    not reported again as never retrieved."""
    if not ack.cancelled() and ack.exception() is not None:
        logger.debug("a record given up on was refused after all: %s", ack.exception())


def _unreachable(topic: str, error: BaseException, *,
                 principal: str | None) -> JobstreamError:  # fmt: skip
    """The error of a client that could not connect within its timeout: an
    AuthorizationError when the broker refused this principal (an idempotent producer
    needs a WRITE grant), else a retryable SubmissionError."""
    refused = authorization(topic, _failure("", error).code, principal=principal)
    if refused is not None:
        return refused
    reason = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
    return SubmissionError(topic, f"could not connect to the broker: {reason}", [],
                           retryable=True)  # fmt: skip
