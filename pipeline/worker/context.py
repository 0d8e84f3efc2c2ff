"""What a handler is told about the execution it runs.

A frozen value built from the ExecutionRequested record as received, of plain values
only (it crosses to a child process, pipeline/worker/child.py), so handlers never touch
the records and cannot change what the worker later reports. The one thing in it that
changes is whether the run was cancelled (docs/lifecycle.md, "Cancelling a run"): a sync
handler that may run long checks ``ctx.cancelled`` between steps (or waits with
``ctx.wait_cancelled(seconds)`` instead of sleeping) and returns early; an async handler
needs nothing, it gets ``CancelledError`` at its next ``await``. ``params`` is parsed
here, once, from the JSON text of ``spec.params``; a record whose params are not a JSON
object is refused with a non-retryable ValidationError (no attempt can fix the input).

A handler tells how far it has got with ``ctx.progress(fraction, message)`` (``await
ctx.aprogress(...)`` in an ``async def`` one): the report goes to the context's
``progress_sink``, which the worker reads at its own pace (pipeline/worker/progress.py).
A long handler saves what it needs to go on with ``ctx.checkpoint(state)`` (``await
ctx.acheckpoint(state)``), and its next attempt finds it in ``ctx.resume_from``
(pipeline/worker/checkpoints.py).

A handler of a workflow's job submits children in its workflow with ``ctx.spawn(job_type,
params, key=...)``: each goes to the context's ``spawn_sink`` as its JobSubmitted, which
the worker produces in the run's next transaction (pipeline/worker/spawns.py).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import orjson

from jobstream._pipeline.clock import now_ms
from jobstream._pipeline.errors import ValidationError
from jobstream._pipeline.model.labels import STEP_LABEL
from jobstream._pipeline.worker import spawns
from jobstream._pipeline.worker.checkpoints import CheckpointReport, encode_state, resume_value
from jobstream._pipeline.worker.lease import RunLease
from jobstream._pipeline.worker.progress import ProgressReport, checked
from jobstream._pipeline.worker.spawns import Spawned, SpawnLedger

if TYPE_CHECKING:  # a handler's child process imports this module, not the records
    from jobstream._pipeline.model import records
    from jobstream._pipeline.model.retry import RetryPolicy


@dataclass(frozen=True, kw_only=True)
class ParentResult:
    """One parent of the job (``depends_on``) as it ended."""

    job_id: str
    step: str | None
    """Its step name, for a job submitted in a workflow."""
    outcome: str
    """SUCCEEDED; DEAD_LETTERED or CANCELLED when the job runs anyway (on_parent_failure=RUN)."""
    result: Any
    """Its result parsed from JSON; None when it returned nothing or its result is a URI."""
    result_uri: str | None
    """Where its large (or bytes) result is: ``kafka://<jobs.results>/<job id>``, served
    whole by ``GET /api/v1/jobs/{job_id}/result``."""


Report = ProgressReport | CheckpointReport
"""What a handler tells its worker as it runs."""


def dropped(report: Report) -> None:
    """The progress sink of a context built outside a worker: reports go nowhere."""


@dataclass(frozen=True, kw_only=True)
class JobContext:
    """One execution of one job, as its handler sees it."""

    job_id: str
    execution_id: str
    """Unique per firing and attempt; a redelivered record keeps it."""
    attempt: int
    """1 for the first attempt, then one more per retry."""
    epoch: int
    """Fencing token (the firing instant): outcomes of older epochs are ignored."""
    job_type: str
    owner: str
    params: dict[str, Any]
    """``spec.params`` parsed from JSON."""
    scheduled_at_ms: int
    """When the job was due (epoch ms)."""
    deadline_ms: int | None
    """When this worker times the attempt out (epoch ms): the start plus the timeout, so a
    handler can budget its work. None only for a context built without a timeout."""
    worker_id: str
    parent_results: Mapping[str, ParentResult] = field(default_factory=dict)
    """The job's parents as they ended, by step name (by job id for a parent that is not a
    named step), in its ``depends_on`` order. Empty for a job without parents."""
    cancel_signal: threading.Event = field(default_factory=threading.Event, repr=False,
                                           compare=False)  # fmt: skip
    """Set by the worker when a cancel of the run reaches it; read it through
    :attr:`cancelled` and :meth:`wait_cancelled`."""
    resume_from: Any = None
    """What the job's latest earlier attempt saved with :meth:`checkpoint` (a JSON value as
    it was saved, bytes as bytes): go on from there. None on a first attempt, and when no
    attempt saved one."""
    progress_sink: Callable[[Report], None] = field(default=dropped, repr=False,
                                                    compare=False)  # fmt: skip
    """Where :meth:`progress` and :meth:`checkpoint` put each report: the run's reporter in
    a worker; a context built by hand (a test calling a handler) drops them unless given
    one."""
    workflow_id: str | None = None
    """The workflow the job belongs to; None for a job submitted on its own, which cannot
    :meth:`spawn`."""
    step: str | None = None
    """The job's step name in its workflow (its ``jobstream.step`` label); None for a job
    submitted without one."""
    spawn_sink: Callable[[Spawned], None] = field(default=spawns.dropped, repr=False,
                                                  compare=False)  # fmt: skip
    """Where :meth:`spawn` puts each child: the run's box in a worker, which produces it to
    jobs.intake; a context built by hand drops them (:attr:`spawned` lists them)."""
    spawn_ledger: SpawnLedger = field(default_factory=SpawnLedger, repr=False, compare=False)
    """The keys the run has spawned, and the ordinal of its next spawn without one."""
    lease: RunLease | None = field(default=None, repr=False, compare=False)
    """The run's lease as its worker sees it; None in a context built by hand."""

    @property
    def lease_ok(self) -> bool:
        """Whether the run still holds its lease: False once none of its heartbeats has
        reached the brokers for 3/4 of the status processor's lease (the worker paused, or
        cut off), for good. Then the job's retry may soon run elsewhere, and the worker is
        stopping this run: read it before a side effect that must not happen twice, and
        return at once when it is False. Always True in a context built by hand."""
        return self.lease is None or self.lease.ok

    @property
    def cancelled(self) -> bool:
        """Whether the run was cancelled: return soon, whatever the handler returns then
        is dropped and the run ends CANCELLED."""
        return self.cancel_signal.is_set()

    def wait_cancelled(self, timeout_s: float) -> bool:
        """Sleep up to ``timeout_s``, waking at once when the run is cancelled; True if it was."""
        return self.cancel_signal.wait(timeout_s)

    def progress(self, fraction: float, message: str | None = None) -> None:
        """Tell how far the run has got: ``fraction`` from 0 to 1, and what it is doing in a
        short ``message`` (cut to 200 characters). A ValueError naming the argument for a
        fraction outside 0..1 (or not a number) or a message that is not a string.

        Cheap and never blocking: call it as often as suits the work. The worker sends the
        latest report at most 4 times a second, and the last one before the outcome.
        """
        value, text = checked(fraction, message)
        self.progress_sink(ProgressReport(value, text, now_ms()))

    async def aprogress(self, fraction: float, message: str | None = None) -> None:
        """:meth:`progress` for an ``async def`` handler, which then yields to the event
        loop: a loop of steps that reports as it goes lets the other runs (and a cancel) in."""
        self.progress(fraction, message)
        await asyncio.sleep(0)

    def checkpoint(self, state: object) -> None:
        """Save how far the run has got, for the job's next attempt (after a crash, a
        timeout, a lost lease or a redrive) to go on from as ``ctx.resume_from``: a JSON
        value, or bytes, of at most 64 KiB encoded (an InvalidArgumentError, a ValueError,
        naming ``state`` otherwise). Save where the work is (an offset, a page, an id),
        not the work.

        Cheap and never blocking: the latest one leaves with the run's next progress report
        (at most 4 times a second), and the last one before the outcome. A checkpoint saved
        less than that before the worker dies may be lost: the next attempt then resumes
        from the one before.
        """
        data, is_json = encode_state(state)
        self.progress_sink(CheckpointReport(data, is_json, now_ms()))

    async def acheckpoint(self, state: object) -> None:
        """:meth:`checkpoint` for an ``async def`` handler, which then yields to the event loop."""
        self.checkpoint(state)
        await asyncio.sleep(0)

    def spawn(self, job_type: str, params: Mapping[str, Any] | None = None, *,
              key: str | int | None = None, priority: str | None = None,
              run_at: datetime | str | None = None, timeout_ms: int | None = None,
              retry: RetryPolicy | Mapping[str, Any] | None = None,
              labels: Mapping[str, str] | None = None, pool: str | None = None) -> str:  # fmt: skip
        """Submit a child job in this job's workflow and return its job id; the workflow's
        steps that wait for this job wait for its children too.

        The child's id derives from the workflow, this job's step and ``key``: the same
        for every attempt of the run, so a retried handler that spawns again makes the
        same children, which are submitted once. Without a ``key`` the spawn takes its
        ordinal among the run's spawns without one (``0``, ``1``, ...): a retry that spawns
        in another order (by a set's order, from threads) makes other children, so give
        a key (an item's id, a string or an int) wherever the order may change. Spawning a
        key twice in one run raises ValidationError naming ``key``.

        The other arguments are those of a submission (``JobClient.submit``), checked by
        its rules: a bad child raises ValidationError naming its field (``spec.params``,
        ``spec.priority``, ...), and ``workflow_id`` for a job not in a workflow. The child
        belongs to this job's owner, and carries the labels ``jobstream.spawned_by`` (this
        job's id) and ``jobstream.step`` (its step name, ``<this step>/<key>``).

        Never blocking: the worker produces the child in the run's next transaction, at
        the latest with its outcome (a child spawned after the run's timeout or cancel
        is not submitted).
        """
        # Loaded at the first spawn: a handler's child process starts without pydantic.
        from jobstream._pipeline.worker import spawn_record

        if self.workflow_id is None:
            raise ValidationError("workflow_id", "this job belongs to no workflow: only a job "
                                                 "of a workflow can spawn children")  # fmt: skip
        taken = self.spawn_ledger.take(None if key is None else spawn_record.spawn_key(key))
        try:
            record = spawn_record.spawned_record(
                spawner_id=self.job_id, owner=self.owner, workflow_id=self.workflow_id,
                holder_step=self.step or self.job_id, key=taken, job_type=job_type,
                now_ms=now_ms(),
                fields={"params": params, "priority": priority, "run_at": run_at,
                        "timeout_ms": timeout_ms, "retry": retry, "labels": labels,
                        "pool": pool},
            )  # fmt: skip
        except BaseException:
            self.spawn_ledger.release(taken)
            raise
        self.spawn_ledger.spawned(taken, record.job_id)
        self.spawn_sink(Spawned(taken, record.job_id, record))
        return record.job_id

    async def aspawn(self, job_type: str, params: Mapping[str, Any] | None = None,
                     **options: Any) -> str:  # fmt: skip
        """:meth:`spawn` for an ``async def`` handler, which then yields to the event loop,
        as :meth:`aprogress` does: a loop that spawns many lets the other runs in."""
        job_id = self.spawn(job_type, params, **options)
        await asyncio.sleep(0)
        return job_id

    @property
    def spawned(self) -> Mapping[str, str]:
        """The children this run has spawned so far: key -> job id, in spawn order."""
        return MappingProxyType(self.spawn_ledger.children())


def parse_params(text: str | None) -> dict[str, Any]:
    """``spec.params`` as a dict; anything but a JSON object is a ValidationError."""
    try:
        params = orjson.loads(text or "{}")
    except orjson.JSONDecodeError as exc:
        raise ValidationError("spec.params", f"not valid JSON: {exc}") from exc
    if not isinstance(params, dict):
        raise ValidationError("spec.params", f"expected a JSON object, got {type(params).__name__}")
    return params


def parent_results(parents: list[records.ParentResultRecord]) -> Mapping[str, ParentResult]:
    """The ``parent_results`` of an ExecutionRequested, read-only, by step name or job id."""
    found = {}
    for record in parents:
        text = record.result
        try:
            value = None if text is None else orjson.loads(text)
        except orjson.JSONDecodeError:
            value = text  # a result written by another client: handed over as it is
        parent = ParentResult(job_id=record.job_id, step=record.step,
                              outcome=str(record.outcome), result=value,
                              result_uri=record.result_uri)  # fmt: skip
        found[parent.step or parent.job_id] = parent
    return MappingProxyType(found)


def build_context(
    execution: records.ExecutionRequested,
    *,
    worker_id: str,
    started_ms: int,
    timeout_s: float | None,
    progress_sink: Callable[[Report], None] | None = None,
    spawn_sink: Callable[[Spawned], None] | None = None,
    lease: RunLease | None = None,
) -> JobContext:
    """The context of an ExecutionRequested started at ``started_ms``; its handler's
    progress reports go to ``progress_sink``, the children it spawns to ``spawn_sink``."""
    spec = execution.spec
    return JobContext(
        job_id=execution.job_id,
        execution_id=execution.execution_id,
        attempt=execution.attempt,
        epoch=execution.epoch,
        job_type=spec.job_type,
        owner=spec.owner,
        params=parse_params(spec.params),
        scheduled_at_ms=execution.scheduled_at_ms,
        deadline_ms=None if timeout_s is None else started_ms + int(timeout_s * 1000),
        worker_id=worker_id,
        parent_results=parent_results(execution.parent_results),
        resume_from=resume_value(execution.resume_from),
        progress_sink=progress_sink or dropped,
        workflow_id=execution.workflow_id,
        step=spec.labels.get(STEP_LABEL),
        spawn_sink=spawn_sink or spawns.dropped,
        lease=lease,
    )
