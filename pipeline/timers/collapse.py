"""Debounce and singleton keys at the timers: submissions of one key meet and collapse here.

A debounced or singleton submission is decided on the jobs.intake partition of its key's
collapse key (pipeline/model/collapse.py). Read on another partition (a producer keyed it
by its job id), it is forwarded there, in the same transaction, and nothing else is done
with it. On its key's partition:

- **debounce**: the key's window (a :class:`DebounceEntry`, due when it closes) is opened
  by the first submission and pushed on by each later one; every submission is COLLAPSED
  into the window's run at once. When the window closes its run is submitted to jobs.intake
  under its own (derived) id, keyed by it: from there it is an ordinary job. A submission
  read once the window is due closes it first, then opens the next.
- **singleton**: the key's :class:`SingletonEntry` names its current job, forwarded to its
  own partition marked (SINGLETON_LABEL) so it runs as an ordinary job. While it has not
  ended, a DROP submission is COLLAPSED naming it; a REPLACE one waits as the next (an
  earlier waiting one is COLLAPSED naming it). The status processor's SingletonEnded of
  the current job starts the next one, or frees the key.

Every change is an entry of the timer store, so it is in the changelog and the transaction
with the records consumed and produced.
"""

from __future__ import annotations

import logging

from jobstream._pipeline.model import collapse
from jobstream._pipeline.model.collapse import DEBOUNCE, Verdict
from jobstream._pipeline.model.keys import scoped
from jobstream._pipeline.model.labels import SINGLETON_LABEL
from jobstream._pipeline.model.lifecycle import LifecycleKind
from jobstream._pipeline.model.params import submission_fields
from jobstream._pipeline.model.records import JobSubmitted, SingletonEnded
from jobstream._pipeline.partitioning import java_partition, partition_key
from jobstream._pipeline.runtime.processor import Output
from jobstream._pipeline.serde import Event
from jobstream._pipeline.timers.entry import DebounceEntry, SingletonEntry
from jobstream._pipeline.timers.state import TimerState
from jobstream._pipeline.timers.workflow import Lifecycle

log = logging.getLogger(__name__)

K = LifecycleKind


def window_timer_id(owner: str, key: str) -> str:
    """A debounce key's window in the timer store (upper case: the store's lower-case
    first letters are the workflows' record kinds)."""
    return "D:" + scoped(owner, key)


def singleton_timer_id(owner: str, key: str) -> str:
    return "G:" + scoped(owner, key)


class Collapses:
    """The timers' decisions on debounced and singleton submissions."""

    def __init__(self, intake: str, partitions: int, lifecycle: Lifecycle) -> None:
        self.intake = intake
        self.partitions = partitions
        """jobs.intake's partitions, over which a collapse key is hashed."""
        self.lifecycle = lifecycle
        self.forwarded = 0

    def submitted(self, state: TimerState, job: JobSubmitted, now_ms: int) -> list[Output] | None:
        """What a submission does here; None for one that is not debounced nor singleton
        (or a singleton job its key already took): the caller schedules it as any job."""
        found = collapse.collapse_of(job)
        if found is None:
            return None
        kind, key = found
        record_key = collapse.collapse_key(job.spec.owner, kind, key)
        partition = java_partition(record_key, self.partitions)
        if partition != state.partition:
            self.forwarded += 1
            return [Output(self.intake, record_key, Event("JobSubmitted", job), partition,
                           urgent=True)]  # fmt: skip
        if kind == DEBOUNCE:
            return self._debounced(state, job, key, now_ms)
        return self._singleton(state, job, key, now_ms)

    # -- debounce ------------------------------------------------------------------------

    def _debounced(self, state: TimerState, job: JobSubmitted, key: str,
                   now_ms: int) -> list[Output]:  # fmt: skip
        owner = job.spec.owner
        keys = job.spec.job_keys
        assert keys is not None  # collapse_of found its debounce key
        timer_id = window_timer_id(owner, key)
        emits: list[Output] = []
        window = state.get(timer_id)
        if isinstance(window, DebounceEntry) and window.due_ms <= now_ms:
            emits.extend(self.close(state, window, now_ms))  # closed: this one opens the next
            window = None
        if not isinstance(window, DebounceEntry):
            run_id, idempotency_key = collapse.debounce_run_id(owner, job.job_id)
            window = DebounceEntry(
                timer_id=timer_id, job=job, run_id=run_id, run_idempotency_key=idempotency_key,
                opened_ms=now_ms,
                due_ms=collapse.window_close_ms(keys, opened_ms=now_ms, now_ms=now_ms),
            )  # fmt: skip
        else:
            window = window.evolve(
                job=collapse.kept(window.job, job), joined=window.joined + 1,
                due_ms=collapse.window_close_ms(keys, opened_ms=window.opened_ms, now_ms=now_ms),
            )  # fmt: skip
        state.put(window)
        detail = (f"debounced on key {key!r}: runs as {window.run_id} when the window closes "
                  f"(at {window.due_ms})")  # fmt: skip
        emits.append(self.lifecycle(K.COLLAPSED, job, now_ms, joined_job_id=window.run_id,
                                    scheduled_at_ms=window.due_ms, detail=detail,
                                    **submission_fields(job)))  # fmt: skip
        return emits

    def close(self, state: TimerState, window: DebounceEntry, now_ms: int) -> list[Output]:
        """The window has closed: submit its run, under its own id, and forget the window."""
        state.remove(window.timer_id)
        run = collapse.run_of(window.job, run_id=window.run_id, now_ms=now_ms,
                              idempotency_key=window.run_idempotency_key)  # fmt: skip
        log.debug("debounce window closed", extra={"job_id": run.job_id,
                                                   "joined": window.joined})  # fmt: skip
        return [Output(self.intake, partition_key(run.job_id, None), Event("JobSubmitted", run),
                       urgent=True)]  # fmt: skip

    # -- singleton -----------------------------------------------------------------------

    def _singleton(self, state: TimerState, job: JobSubmitted, key: str,
                   now_ms: int) -> list[Output]:  # fmt: skip
        owner = job.spec.owner
        timer_id = singleton_timer_id(owner, key)
        entry = state.get(timer_id)
        held = entry if isinstance(entry, SingletonEntry) else None
        waiting = None if held is None or held.waiting is None else held.waiting
        verdict = collapse.singleton_verdict(
            job, current=None if held is None else held.current,
            waiting=None if waiting is None else waiting.job_id,
        )  # fmt: skip
        if verdict is Verdict.REPEAT:
            return []
        marked = collapse.admitted(job, key)
        if verdict is Verdict.RUN or held is None:
            state.put(SingletonEntry(timer_id=timer_id, current=job.job_id, key_owner=owner,
                                     due_ms=now_ms, blocked=True))  # fmt: skip
            return [self._run(marked)]
        if verdict is Verdict.DROP:
            return [self.lifecycle(K.COLLAPSED, job, now_ms, joined_job_id=held.current,
                                   detail=f"dropped: singleton key {key!r} has {held.current} "
                                          "queued or running",
                                   **submission_fields(job))]  # fmt: skip
        emits: list[Output] = []
        if waiting is not None:
            emits.append(self.lifecycle(K.COLLAPSED, waiting, now_ms, joined_job_id=job.job_id,
                                        detail=f"replaced on singleton key {key!r} by "
                                               f"{job.job_id}"))  # fmt: skip
        state.put(held.evolve(waiting=marked))
        emits.append(self.lifecycle(K.SCHEDULED, marked, now_ms,
                                    **submission_fields(marked)))  # fmt: skip
        emits.append(self.lifecycle(K.HELD, marked, now_ms, held_by=f"singleton:{key}",
                                    waiting_for=[held.current],
                                    detail=f"waits for {held.current} of singleton key "
                                           f"{key!r} to end"))  # fmt: skip
        return emits

    def ended(self, state: TimerState, ended: SingletonEnded, now_ms: int) -> list[Output]:
        """The key's current job has ended: run the waiting one, or free the key. The end
        of any other job (a replaced one, a repeat) changes nothing."""
        timer_id = singleton_timer_id(ended.owner, ended.singleton_key)
        held = state.get(timer_id)
        if not isinstance(held, SingletonEntry) or held.current != ended.job_id:
            return []
        if held.waiting is None:
            state.remove(timer_id)
            return []
        state.put(held.evolve(current=held.waiting.job_id, waiting=None))
        return [self._run(held.waiting)]

    def never_ran(self, job: JobSubmitted, now_ms: int) -> list[Output]:
        """A job its singleton key's timers let through that is not a job here (its id was
        known: a resubmission with the same idempotency key, a trigger's replay): free the
        key, whose timers would wait for its end forever."""
        key = job.spec.labels.get(SINGLETON_LABEL)
        if key is None:
            return []
        return [Output(self.intake, *collapse.singleton_ended(
            job.job_id, job.spec.owner, key, "DUPLICATE", now_ms), urgent=True)]

    def _run(self, job: JobSubmitted) -> Output:
        """A singleton job to its own partition, where the timers schedule it as any job."""
        return Output(self.intake, partition_key(job.job_id, None), Event("JobSubmitted", job),
                      urgent=True)  # fmt: skip
