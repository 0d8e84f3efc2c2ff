"""Where a job fires: intake commands and retries change timers, the ticker fires them.

Pure over a :class:`TimerState` (one partition's store within one transaction): every
call returns the records to emit, and the runner carries them, the changelog and the
input offsets in one Kafka transaction. No Kafka here, so tests drive it with a clock
of their own.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from jobstream._pipeline.avro_bounds import INT_MAX
from jobstream._pipeline.concurrency import ConcurrencyLimits
from jobstream._pipeline.limits.throttle import Throttle
from jobstream._pipeline.model.cancel import CancelRequest
from jobstream._pipeline.model.commands import command_refusal, update_refusal
from jobstream._pipeline.model.deadlines import attempt_deadline_ms, attempt_refusal
from jobstream._pipeline.model.held import held_refusal, is_held
from jobstream._pipeline.model.job import cron_of
from jobstream._pipeline.model.labels import SINGLETON_LABEL
from jobstream._pipeline.model.lifecycle import LifecycleKind
from jobstream._pipeline.model.params import submission_fields, summarize_params
from jobstream._pipeline.model.records import (
    CronSchedule,
    ExecutionRequested,
    JobCancelled,
    JobSubmitted,
    JobTriggered,
    RetryScheduled,
    ScheduleAction,
    ScheduleChanged,
    SingletonEnded,
    WorkflowSignalled,
    evolve,
    lifecycle,
)
from jobstream._pipeline.partitioning import partition_key
from jobstream._pipeline.runtime.processor import Output
from jobstream._pipeline.scheduling import due_runs, execution_id, next_due_ms
from jobstream._pipeline.scheduling.fair_share import fair_batch, group_by, weight_of
from jobstream._pipeline.serde import Event
from jobstream._pipeline.timers.collapse import Collapses
from jobstream._pipeline.timers.entry import (
    AnyEntry,
    DebounceEntry,
    Firing,
    FiringEntry,
    JobEntry,
    Marker,
    MarkerEntry,
    RetryEntry,
    ScheduleEntry,
    SingletonEntry,
    retry_timer_id,
)
from jobstream._pipeline.timers.held import HeldSteps
from jobstream._pipeline.timers.holds import RateHolds
from jobstream._pipeline.timers.intake import Command, Ended, Workflow
from jobstream._pipeline.timers.lead import RATE_PER_S, LeadRule, Leads
from jobstream._pipeline.timers.maps import Members
from jobstream._pipeline.timers.recurring import RecurringWorkflows
from jobstream._pipeline.timers.state import TimerState
from jobstream._pipeline.timers.workflow import WorkflowTimers
from jobstream._pipeline.topics import Topics
from jobstream._pipeline.workflows import GateAction, WorkflowRecord
from jobstream._pipeline.workflows.commands import STEP_LABEL
from jobstream._pipeline.workflows.members import SPAWNED_BY_LABEL

log = logging.getLogger(__name__)

K = LifecycleKind

CANCELLED_ATTEMPT = INT_MAX
"""The attempt a cancel's retry marker records: no retry request is above it."""


@dataclass(frozen=True)
class TimerPolicy:
    grace_ms: int = 60_000
    """A cron run at most this late is on time; later ones follow the misfire policy."""
    marker_ttl_ms: int = 7 * 24 * 3600 * 1000
    """How long a fired job's idempotency key (an ended workflow's record) keeps
    resubmissions a no-op."""
    retry_marker_ttl_ms: int = 24 * 3600 * 1000
    """How long a fired retry (or a cancel) keeps late duplicate retry requests a no-op."""
    owner_weights: Mapping[str, float] = field(default_factory=dict)
    """Each owner's weight in fair firing (pipeline/scheduling/fair_share.py); "*" sets the
    default of the owners not named, otherwise 1."""
    concurrency: ConcurrencyLimits = field(default_factory=ConcurrencyLimits)
    """Types with a fleet-wide limit fire only to the partitions that carry its slots
    (pipeline/concurrency.py)."""
    markers_trusted_before_ms: int | None = None
    """A fired job's marker written at or after this instant keeps no resubmission a
    no-op (JOBSTREAM_MARKERS_TRUSTED_BEFORE): on a standby that took over from a lost
    cluster, a marker may have been copied without the execution fired with it."""
    markers_trusted_from_ms: int | None = None
    """... unless written at or after this one (JOBSTREAM_MARKERS_TRUSTED_FROM): the
    standby's own markers, whose executions it fired itself, hold. Without it, a pending
    job fired on the standby and then met again by the rewound intake would fire twice."""
    lead_ms: int = 0
    """How long before its due instant an entry fires (JOBSTREAM_FIRE_LEAD): its
    execution waits on the worker, which starts it on the instant (pipeline/worker/early.py).
    The idempotency and retry markers expire that much sooner too, which their windows of
    hours do not notice; a recurring workflow's runs start on their time, not ahead."""
    lead_most_ms: int = 0
    """How far ahead a partition fires at most, when its backlog due soon requires more
    than ``lead_ms`` (JOBSTREAM_FIRE_LEAD_MOST; pipeline/timers/lead.py); at or below
    ``lead_ms`` the lead never changes."""
    lead_rate_per_s: int = RATE_PER_S
    """Firings a partition counts on passing on each second, from which the lead its
    backlog requires is reckoned."""


class TimerLogic:
    """The timer processor's decisions (pipeline/timers/processor.py carries them)."""

    def __init__(self, topics: Topics, policy: TimerPolicy | None = None,
                 throttle: Throttle | None = None) -> None:  # fmt: skip
        self.topics = topics
        self.policy = policy or TimerPolicy()
        self.throttle = throttle or Throttle()
        """The rate limits in force and their buckets (pipeline/limits/)."""
        self.holds = RateHolds(self.throttle, self._lifecycle)
        self.refused_topics: dict[str, str] = {}
        """Execution topics the broker refused to create, with the reason: a job routed to
        one is dead-lettered at firing (pipeline/timers/processor.py fills it)."""
        self.duplicates = 0
        self.workflows = WorkflowTimers(self._lifecycle, self._cancelled, topics.intake,
                                        self.policy.marker_ttl_ms)  # fmt: skip
        self.members = Members(self._lifecycle, self._cancelled, self._finish)
        """Maps and spawners: jobs whose end waits for others (pipeline/timers/maps.py)."""
        self.members.ended = self.workflows.step_ended
        self.workflows.members = self.members
        self.recurring = RecurringWorkflows(topics.events, self.workflows)
        self.held = HeldSteps(self._lifecycle, self._finish, self.members.begin_map)
        """Waits, sleeps and maps: steps the timers end themselves (pipeline/timers/held.py)."""
        self.owner_weight = weight_of(self.policy.owner_weights)
        self.collapses = Collapses(topics.intake, topics.settings.timer_partitions,
                                   self._lifecycle)  # fmt: skip
        """Debounce and singleton keys (pipeline/timers/collapse.py)."""
        policy = self.policy
        self.leads = Leads(LeadRule(least_ms=policy.lead_ms, most_ms=policy.lead_most_ms,
                                    rate_per_s=policy.lead_rate_per_s))  # fmt: skip
        """How far ahead each partition fires (pipeline/timers/lead.py)."""

    # -- intake and retries --------------------------------------------------------------

    def process(self, state: TimerState, command: Command, now_ms: int) -> list[Output]:
        """Apply one command, checked where it entered (pipeline/timers/intake.py); raise
        ValidationError only for what the state refuses (a parent unknown here)."""
        if isinstance(command, JobSubmitted):
            return self._submitted(state, command, now_ms)
        if isinstance(command, ScheduleChanged | JobTriggered) and command.owner is not None:
            return self.recurring.command(state, command, now_ms)  # a recurring workflow's
        if isinstance(command, JobCancelled):
            return self._cancelled(state, command, now_ms)
        if isinstance(command, ScheduleChanged):
            return self._schedule_changed(state, command, now_ms)
        if isinstance(command, JobTriggered):
            return self._triggered(state, command, now_ms)
        if isinstance(command, RetryScheduled):
            return self._retry(state, command, now_ms)
        if isinstance(command, Ended):  # the status first: it reads whether a run had ended
            return (self.recurring.run_ended(state, command, now_ms)
                    + self.workflows.step_ended(state, command.record, command.owner, now_ms))
        if isinstance(command, Workflow):
            return self._workflow_submitted(state, command, now_ms)
        if isinstance(command, WorkflowSignalled):
            return self.held.signalled(state, command, now_ms)
        if isinstance(command, SingletonEnded):
            return self.collapses.ended(state, command, now_ms)
        return (self.recurring.cancelled(state, command, now_ms)
                + self.workflows.cancel_workflow(state, command, now_ms))

    def _submitted(self, state: TimerState, job: JobSubmitted, now_ms: int, *,
                   step: str | None = None) -> list[Output]:  # fmt: skip
        collapsed = self.collapses.submitted(state, job, now_ms)
        if collapsed is not None:
            return collapsed
        workflow_id = job.workflow_id
        known = workflow_id is not None and self.workflows.known(state, job, workflow_id)
        found = state.get(job.job_id)
        if found is not None and self._untrusted(found):
            state.remove(found.timer_id)  # fired again: its first execution may be lost
            found = None
        if known or found is not None:
            self.duplicates += 1  # same job id: a resubmission with the same idempotency key
            return self.collapses.never_ran(job, now_ms)
        if self._cancelled_before(state, job):  # a singleton's waiter, cancelled meanwhile
            return [self._lifecycle(K.CANCELLED, job, now_ms, **submission_fields(job),
                                    detail="cancelled while it waited for its singleton key")]
        due = self._first_due(job, now_ms)
        gate = None if workflow_id is None else self.workflows.admit(state, job, workflow_id, step)
        # The first event of a job tells the status processor what only the submission holds.
        first = submission_fields(job)
        if due is None:
            return [self._lifecycle(K.CANCELLED, job, now_ms, detail="schedule has no future run",
                                    **first)]  # fmt: skip
        if gate is not None and gate.action is GateAction.CANCEL:
            return [self._lifecycle(K.CANCELLED, job, now_ms, detail=gate.reason, **first)]
        blocked = gate is not None and gate.action is GateAction.WAIT
        state.put(JobEntry(timer_id=job.job_id, job=job, due_ms=due, blocked=blocked))
        holder = job.spec.labels.get(SPAWNED_BY_LABEL)
        if holder is not None and workflow_id is not None:
            self.members.joined(state, job, holder)
        if gate is not None and blocked:
            return [self.workflows.blocked(job, now_ms, due, gate.waiting, **first)]
        return [self._lifecycle(K.SCHEDULED, job, now_ms, scheduled_at_ms=due, **first)]

    def _workflow_submitted(self, state: TimerState, workflow: Workflow,
                            now_ms: int) -> list[Output]:  # fmt: skip
        """Every step of a workflow, parents first (its rules passed at intake)."""
        data = workflow.record
        if state.nodes.workflow(data.owner, data.workflow_id) is not None:
            self.duplicates += 1  # the same workflow again: same id, same idempotency key
            return []
        if workflow.schedule is not None:
            self.workflows.schedule(state, data, workflow.schedule, now_ms)
            return self.recurring.scheduled(state, data, now_ms)
        state.nodes.put_workflow(WorkflowRecord(
            owner=data.owner, workflow_id=data.workflow_id, steps=len(workflow.steps),
            idempotency_key=data.idempotency_key, submitted_at_ms=data.submitted_at_ms,
            schedule_id=data.schedule_id,
        ))  # fmt: skip
        emits: list[Output] = []
        for name, job in workflow.steps:
            emits.extend(self._submitted(state, job, now_ms, step=name))
        return emits

    def _cancelled(self, state: TimerState, data: JobCancelled, now_ms: int) -> list[Output]:
        """Drop the job's pending fire or retry; a run of it that may be under way (it has
        fired, or it is a schedule whose last run may still go on) is for the workers:
        a CancelRequested on jobs.control (pipeline/model/cancel.py)."""
        emits: list[Output] = []
        in_flight = True
        items: list[Output] = []
        for timer_id in (data.job_id, retry_timer_id(data.job_id)):
            entry = state.get(timer_id)
            if not isinstance(entry, FiringEntry):  # none, or a marker
                continue
            if isinstance(entry, JobEntry) and entry.waiting_since_ms is not None:
                items = self.members.cancel_items(state, entry, now_ms)  # a map's, if any
            self._finish(state, entry, now_ms)
            self.workflows.forget_waiting(state, entry.job)
            in_flight = isinstance(entry, JobEntry) and entry.spec.cron is not None
            emits.append(self._lifecycle(K.CANCELLED, entry.job, now_ms, detail=data.reason,
                                         requested_by=data.requested_by))  # fmt: skip
        # A failure reported after the cancel must not bring the job back.
        self._retry_marker(state, data.job_id, CANCELLED_ATTEMPT, now_ms)
        emits = emits[:1]
        if in_flight:
            emits.append(self._control(data, now_ms))
        return emits + items

    def _control(self, data: JobCancelled, now_ms: int) -> Output:
        """The CancelRequested of a cancel that may find a run under way: it covers the
        executions fired up to now, on this partition's clock as their epochs are."""
        request = CancelRequest(job_id=data.job_id, workflow_id=data.workflow_id,
                                requested_at_ms=data.requested_at_ms or now_ms,
                                up_to_epoch=now_ms, requested_by=data.requested_by,
                                reason=data.reason)  # fmt: skip
        return Output(self.topics.control, request.key, request.to_event(), urgent=True)

    def _schedule_changed(self, state: TimerState, data: ScheduleChanged,
                          now_ms: int) -> list[Output]:  # fmt: skip
        entry = state.get(data.job_id)
        if not isinstance(entry, JobEntry):
            if data.run_at_ms is not None:
                _ignored(data, "no pending run: it has fired, ended, or is unknown here")
            return []
        if _waiting(entry, data):
            return []
        action = data.action
        if action is not ScheduleAction.UPDATE and self._refused(action.lower(), entry, data):
            return []
        if action is ScheduleAction.PAUSE and not entry.paused:
            state.put(entry.evolve(paused=True))
            return [self._lifecycle(K.PAUSED, entry.job, now_ms, **_asked(data, "paused"))]
        if action is ScheduleAction.RESUME and entry.paused:
            due = self._next_due(entry.job, now_ms, entry.runs) or entry.due_ms
            state.put(entry.evolve(paused=False, due_ms=due, held_by=None, held_at_ms=None))
            return [self._lifecycle(K.RESUMED, entry.job, now_ms, scheduled_at_ms=due,
                                    **_asked(data, "resumed"))]  # fmt: skip
        if action is ScheduleAction.UPDATE:
            run_at = data.run_at_ms
            refusal = update_refusal(entry.job_id, recurring=entry.spec.cron is not None,
                                     pending=True, blocked=entry.blocked,
                                     cron=data.cron is not None,
                                     run_at=run_at is not None)  # fmt: skip
            if refusal is not None:
                _ignored(data, refusal)
                return []
            spec = entry.spec
            if data.cron is not None:
                spec = evolve(spec, cron=data.cron)
            if data.params is not None:
                spec = evolve(spec, params=data.params)
                if is_held(spec) and (refused := held_refusal(spec, entry.job.workflow_id)):
                    _ignored(data, refused)
                    return []
            if run_at is not None:
                # A moved job's spec asks for its new time: the entry holds one due instant.
                spec = evolve(spec, run_at_ms=run_at)
            job = evolve(entry.job, spec=spec)
            if spec.cron is not None:
                updated = self._next_due(job, now_ms, entry.runs)
            else:
                updated = entry.due_ms if run_at is None else run_at
            detail = "schedule updated" if run_at is None else "run time moved"
            if updated is None:
                self._finish(state, entry, now_ms)
                return [self._lifecycle(K.CANCELLED, job, now_ms,
                                        **_asked(data, "schedule ended"))]  # fmt: skip
            state.put(entry.evolve(job=job, due_ms=updated, held_by=None, held_at_ms=None))
            if entry.paused:  # stays PAUSED: RESUME announces the schedule it then follows
                return [self._lifecycle(K.PAUSED, job, now_ms,
                                        **_asked(data, f"{detail}, still paused"))]  # fmt: skip
            changed = {**summarize_params(spec.params)._asdict(), "labels": dict(spec.labels)}
            return [self._lifecycle(K.SCHEDULED, job, now_ms, scheduled_at_ms=updated,
                                    **_asked(data, detail), **changed)]  # fmt: skip
        return []

    @staticmethod
    def _refused(command: str, entry: JobEntry, data: ScheduleChanged | JobTriggered) -> bool:
        """Whether the model's rule leaves the pending ``entry`` as it is (logged)."""
        refusal = command_refusal(command, entry.job_id, recurring=entry.spec.cron is not None,
                                  pending=True, blocked=entry.blocked,
                                  paused=entry.paused)  # fmt: skip
        if refusal is not None:
            _ignored(data, refusal)
        return refusal is not None

    def _triggered(self, state: TimerState, data: JobTriggered, now_ms: int) -> list[Output]:
        """Run a pending job now: a one-off job fires now instead of at its time; a
        recurring one fires once more now, keeps its next occurrence, and counts the run
        towards its max_runs. A job that fired already, ended, waits for its parents or is
        paused (resume it first) has nothing to run now: the command changes nothing."""
        entry = state.get(data.job_id)
        if (not isinstance(entry, JobEntry) or _waiting(entry, data)
                or self._refused("trigger", entry, data)):  # fmt: skip
            return []
        cron = entry.spec.cron
        if cron is None:
            # Due now: this iteration's punctuation fires it, as any other due timer.
            due = min(entry.due_ms, now_ms)
            state.put(entry.evolve(due_ms=due))
            return [self._lifecycle(K.SCHEDULED, entry.job, now_ms, scheduled_at_ms=due,
                                    **_asked(data, "run now"))]  # fmt: skip
        emits = self._fire(state, entry, now_ms, now_ms, asked=_asked(data, "run now"))
        runs = entry.runs + 1
        if cron.max_runs is not None and runs >= cron.max_runs:
            self._finish(state, entry, now_ms)
        else:
            state.put(entry.evolve(runs=runs))
        return emits

    def _retry(self, state: TimerState, data: RetryScheduled, now_ms: int) -> list[Output]:
        """Schedule another attempt, unless this attempt is already pending or has fired.

        Two failure reports of one execution (a zombie's FAILED after its LOST) ask for
        the same attempt; the retry timer, or the marker it leaves after firing, makes
        the second one a no-op.
        """
        timer_id = retry_timer_id(data.job_id)
        current = state.get(timer_id)
        if current is not None and current.attempt >= data.attempt:
            self.duplicates += 1
            if current.attempt == CANCELLED_ATTEMPT:  # its status waits for the retry: end it
                return [self._lifecycle(K.CANCELLED, data, now_ms,
                                        detail="cancelled before its retry")]  # fmt: skip
            return []
        job = JobSubmitted(job_id=data.job_id, workflow_id=data.workflow_id,
                           idempotency_key=data.idempotency_key, submitted_at_ms=now_ms,
                           spec=data.spec)  # fmt: skip
        state.put(RetryEntry(timer_id=timer_id, job=job, due_ms=data.retry_at_ms,
                             attempt=data.attempt, errors=data.errors,
                             resume_from=data.resume_from))  # fmt: skip
        return []

    # -- firing ------------------------------------------------------------------------

    def fire_due(self, state: TimerState, now_ms: int, limit: int) -> list[Output]:
        """Fire the entries due at ``now_ms`` (at most ``limit``), owners interleaved, and
        move schedules on. Jobs that rate limits held back go first, as their tokens allow;
        a due job whose limit has no token left joins that limit's queue instead."""
        released = self.holds.release(state, now_ms, limit)
        emits = [emit for entry in released for emit in self._fire_entry(state, entry, now_ms)]
        for entry in self.due_batch(state, self._horizon(state, now_ms), limit - len(released)):
            if entry.due_ms > now_ms and self._on_its_instant(entry):
                continue
            if isinstance(entry, MarkerEntry):
                state.remove(entry.timer_id)
                self.workflows.expired(state, entry)
                continue
            if isinstance(entry, DebounceEntry):
                emits.extend(self.collapses.close(state, entry, now_ms))
                continue
            if isinstance(entry, SingletonEntry):  # out of the schedule: never due
                continue
            if isinstance(entry, FiringEntry) and not is_held(entry.spec):
                held = self.holds.hold(state, entry, now_ms)
                if held is not None:
                    emits.extend(held)
                    continue
            emits.extend(self._fire_entry(state, entry, now_ms))
        return emits

    def _fire_entry(self, state: TimerState, entry: Firing | ScheduleEntry,
                    now_ms: int) -> list[Output]:  # fmt: skip
        """Fire one due entry; a one-off job, a retry, or a job whose topic the broker
        refused (a cron job too: it would be refused at every run) then ends."""
        if isinstance(entry, ScheduleEntry):
            started = self._fire_recurring(state, entry, entry.cron, now_ms)
            return self.recurring.fired(state, entry, started, now_ms)
        if isinstance(entry, JobEntry) and is_held(entry.spec):
            return self.held.fire(state, entry, now_ms)
        cron = entry.spec.cron
        refused = bool(self.refused_topics) and self._refusal(entry) is not None
        if refused or cron is None or isinstance(entry, RetryEntry):
            emits = self._fire(state, entry, entry.due_ms, now_ms)
            self._finish(state, entry, now_ms)
            return emits
        return self._fire_recurring(state, entry, cron, now_ms)

    def _horizon(self, state: TimerState, now_ms: int) -> int:
        """Entries due at or before this instant fire now: the configured lead ahead, or
        as far as the partition's backlog due soon requires (counted once a second)."""
        leads, partition = self.leads, state.partition
        if leads.count_due(partition, now_ms):
            rule = leads.rule
            counts = state.due_per_second(now_ms, rule.horizon_s, rule.count_most)
            leads.counted(partition, now_ms, counts)
        return leads.horizon_ms(partition, now_ms)

    def _on_its_instant(self, entry: AnyEntry) -> bool:
        """Whether an entry fires on its instant, not a lead ahead: a workflow's run (it is
        submitted on its time, its steps due then), a wait or a sleep (no worker waits for
        it), and a job under a rate limit (a limit caps firings, and the runs fired within
        the lead would all start on their instant, beyond the limit)."""
        if isinstance(entry, ScheduleEntry | DebounceEntry):
            return True  # a debounce window closes on its instant: its run fires after
        if isinstance(entry, FiringEntry) and is_held(entry.spec):
            return True  # a wait or a sleep begins and ends on its instant: no worker waits
        return isinstance(entry, FiringEntry) and self.throttle.applies(
            entry.owner, entry.spec.job_type, entry.spec.job_keys)

    def due_batch(self, state: TimerState, now_ms: int, limit: int) -> list[AnyEntry]:
        """The entries to fire now, in weighted fair order across owners.

        When every due entry fits the batch, the one scan in fire-time order already holds
        them all and they are only reordered. When more are due, each owner's own schedule
        gives its share: one owner's flood neither fills the batch nor goes first.
        """
        due = state.due(now_ms, limit + 1)
        if len(due) <= limit:
            return fair_batch(group_by(due, lambda e: e.owner), self.owner_weight, limit)
        owners = state.due_owners(now_ms)
        if len(owners) == 1:  # one owner's flood: its share is the whole batch, in fire order
            return due[:limit]
        queues = {owner: state.due_of(owner, now_ms) for owner in owners}
        return fair_batch(queues, self.owner_weight, limit)

    def _fire_recurring(self, state: TimerState, entry: Firing | ScheduleEntry,
                        schedule: CronSchedule, now_ms: int) -> list[Output]:  # fmt: skip
        cron = cron_of(schedule)
        # A run a limit held back was due in time: the wait was the limit's, not a misfire.
        if now_ms - entry.due_ms <= self.policy.grace_ms or entry.held_at_ms is not None:
            fires: tuple[int, ...] = (entry.due_ms,)
            following = next_due_ms(
                cron, max(entry.due_ms, now_ms), job_id=entry.job_id, runs_so_far=entry.runs + 1
            )
        else:
            missed = due_runs(cron, last_due_ms=entry.due_ms - 1, now_ms=now_ms,
                              job_id=entry.job_id, runs_so_far=entry.runs,
                              grace_ms=self.policy.grace_ms)  # fmt: skip
            fires, following = missed.run_now, missed.next_due_ms
        emits: list[Output] = []
        for fire in fires:
            if isinstance(entry, ScheduleEntry):
                emits.extend(self.workflows.start_run(state, entry, fire, now_ms))
            else:
                emits.extend(self._fire(state, entry, fire, now_ms))
        if following is None:
            self._finish(state, entry, now_ms)
        else:
            state.put(entry.evolve(due_ms=following, runs=entry.runs + len(fires),
                                   held_by=None, held_at_ms=None))  # fmt: skip
        return emits

    def _fire(self, state: TimerState, entry: Firing, due_ms: int, now_ms: int,
              asked: Mapping[str, str | None] | None = None) -> list[Output]:  # fmt: skip
        """The execution of ``entry`` due at ``due_ms`` and its FIRED (with who ``asked``
        for it and why, for a trigger); past the job's deadline, its EXPIRED instead."""
        job = entry.job
        spec = job.spec
        expiry = attempt_refusal(spec, attempt=entry.attempt, due_ms=due_ms, now_ms=now_ms)
        if expiry is not None:
            return [self._lifecycle(K.EXPIRED, job, now_ms, detail=expiry.message,
                                    error=expiry.error(attempt=entry.attempt,
                                                       at_ms=now_ms))]  # fmt: skip
        key = partition_key(job.job_id, job.workflow_id)
        topic = self._execution_topic(entry)
        refusal = self.refused_topics.get(topic)
        if refusal is not None:
            return self._refuse(entry, key, refusal, now_ms)
        ends = attempt_deadline_ms(spec, start_ms=max(now_ms, due_ms), timeout_ms=spec.timeout_ms)
        execution = ExecutionRequested(
            job_id=job.job_id,
            workflow_id=job.workflow_id,
            execution_id=execution_id(job.job_id, entry.attempt, due_ms),
            attempt=entry.attempt,
            # The firing instant orders every execution of a job: a fencing token.
            epoch=now_ms,
            scheduled_at_ms=due_ms,
            fired_at_ms=now_ms,
            deadline_ms=ends,
            spec=spec,
            idempotency_key=job.idempotency_key,
            errors=entry.errors,
            parent_results=self.workflows.parent_results(state, job),
            resume_from=entry.resume_from if isinstance(entry, RetryEntry) else None,
        )
        throttled = None if entry.held_at_ms is None else now_ms - entry.held_at_ms
        fired = lifecycle(K.FIRED, execution, at_ms=now_ms, step=spec.labels.get(STEP_LABEL),
                          scheduled_at_ms=due_ms, lateness_ms=max(0, now_ms - due_ms),
                          throttled_ms=throttled, pool=spec.pool, deadline_ms=spec.deadline_ms,
                          queue_limit_ms=spec.queue_limit_ms, **(asked or {}))  # fmt: skip
        partition = self.policy.concurrency.route(spec, key)
        # Due within half the lead (or late): it cannot wait for the timers' commit interval.
        urgent = due_ms - now_ms < self.policy.lead_ms // 2
        return [Output(topic, key, Event("ExecutionRequested", execution), partition,
                       urgent=urgent),
                Output(self.topics.events, key, Event("JobLifecycle", fired))]  # fmt: skip

    def _execution_topic(self, entry: Firing) -> str:
        spec = entry.spec
        return self.topics.execution(spec.job_type, spec.priority, spec.pool)

    def _refusal(self, entry: Firing) -> str | None:
        """Why the job cannot fire: the broker refused its execution topic; else None."""
        return self.refused_topics.get(self._execution_topic(entry))

    def _refuse(self, entry: Firing, key: bytes, reason: str, now_ms: int) -> list[Output]:
        """The job goes to jobs.intake.dlq as its submission, with the reason, and ends."""
        log.warning("job refused at firing", extra={"job_id": entry.job_id, "reason": reason})
        dead = Output(self.topics.intake_dlq, key, Event("JobSubmitted", entry.job),
                      headers=(("jobstream.error", reason.encode()),
                               ("jobstream.source", b"timers: firing")))  # fmt: skip
        return [dead, self._lifecycle(K.CANCELLED, entry.job, now_ms, detail=reason)]

    # -- helpers -----------------------------------------------------------------------

    def _finish(self, state: TimerState, entry: Firing | ScheduleEntry, now_ms: int) -> None:
        """Drop a timer, leaving a marker where a repeat must stay a no-op.

        A job with an idempotency key keeps one for as long as a resubmission may come;
        a fired retry keeps one recording its attempt, so a late duplicate request for
        the same attempt is recognised.
        """
        if isinstance(entry, JobEntry) and entry.job.idempotency_key:
            marker = Marker(job_id=entry.job_id, idempotency_key=entry.job.idempotency_key)
            state.put(MarkerEntry(timer_id=entry.timer_id, job=marker,
                                  due_ms=now_ms + self.policy.marker_ttl_ms))  # fmt: skip
        elif isinstance(entry, RetryEntry):
            self._retry_marker(state, entry.job_id, entry.attempt, now_ms)
        else:
            state.remove(entry.timer_id)

    def _untrusted(self, entry: AnyEntry) -> bool:
        """Whether ``entry`` is a fired job's marker written between the instant markers
        are trusted before and the one they are trusted from again."""
        since, until = self.policy.markers_trusted_before_ms, self.policy.markers_trusted_from_ms
        if since is None or not isinstance(entry, MarkerEntry):
            return False
        written = entry.due_ms - self.policy.marker_ttl_ms
        return written >= since and (until is None or written < until)

    @staticmethod
    def _cancelled_before(state: TimerState, job: JobSubmitted) -> bool:
        """Whether a job its singleton key's timers let through was cancelled before it came
        here: a cancel reaches a job's own partition, which leaves its marker (a day), while
        a REPLACE submission waits on its key's partition (docs/keys.md)."""
        if SINGLETON_LABEL not in job.spec.labels:
            return False
        marker = state.get(retry_timer_id(job.job_id))
        return marker is not None and marker.attempt == CANCELLED_ATTEMPT

    def _retry_marker(self, state: TimerState, job_id: str, attempt: int, now_ms: int) -> None:
        state.put(MarkerEntry(
            timer_id=retry_timer_id(job_id), attempt=attempt,
            job=Marker(job_id=job_id, idempotency_key=None),
            due_ms=now_ms + self.policy.retry_marker_ttl_ms,
        ))  # fmt: skip

    def _first_due(self, job: JobSubmitted, now_ms: int) -> int | None:
        if job.spec.cron is not None:
            return self._next_due(job, now_ms, 0)
        run_at = job.spec.run_at_ms
        return now_ms if run_at is None else run_at

    @staticmethod
    def _next_due(job: JobSubmitted, now_ms: int, runs: int) -> int | None:
        cron = job.spec.cron
        if cron is None:
            return None
        return next_due_ms(cron_of(cron), now_ms, job_id=job.job_id, runs_so_far=runs)

    def _lifecycle(self, kind: LifecycleKind, job: JobSubmitted | RetryScheduled, now_ms: int,
                   **fields: Any) -> Output:  # fmt: skip
        """A JobLifecycle of ``job`` on jobs.events (a step's carries its name)."""
        event = lifecycle(kind, job, at_ms=now_ms, step=job.spec.labels.get(STEP_LABEL), **fields)
        return Output(self.topics.events, partition_key(job.job_id, job.workflow_id),
                      Event("JobLifecycle", event))  # fmt: skip


def _ignored(command: ScheduleChanged | JobTriggered, reason: str) -> None:
    what = "trigger" if isinstance(command, JobTriggered) else "schedule change"
    log.info("%s ignored", what, extra={"job_id": command.job_id, "reason": reason})


def _waiting(entry: JobEntry, command: ScheduleChanged | JobTriggered) -> bool:
    """Whether ``entry`` is a wait, a sleep or a map that has begun: it ends on its signal,
    its instant or its items, which no trigger, pause or new time changes (logged)."""
    if entry.waiting_since_ms is None:
        return False
    _ignored(command, "it has begun waiting (a signal, its instant, its items): cancel it "
                      "instead")  # fmt: skip
    return True


def _asked(command: ScheduleChanged | JobTriggered, done: str) -> dict[str, str | None]:
    """The fields a command's JobLifecycle carries: who asked, and why (the reason given,
    else what was ``done``)."""
    return {"requested_by": command.requested_by, "detail": command.reason or done}
