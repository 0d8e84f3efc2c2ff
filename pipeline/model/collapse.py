"""Debounce and singleton keys: where their submissions meet, and the rules they follow there.

Submissions of one debounce (or singleton) key have different job ids, so their records
land on different partitions; they meet on the partition of the key's **collapse key**
(``debounce:<owner>NUL<key>``, ``singleton:<owner>NUL<key>``, Java's murmur2 over the
intake partitions, as every record key). The client keys such a submission by it; a record
keyed otherwise (a plain producer keyed it by job id) is forwarded there by the timers of
the partition it landed on (docs/adr/0009-debounce-and-singleton.md).

- **Debounce**: one window per key, opened by the first submission, closed ``window_ms``
  after the latest, at most ``max_delay_ms`` after the first (:func:`window_close_ms`).
  Every submission is COLLAPSED into the window's run, a job of its own whose id derives
  from the first submission's id (:func:`debounce_run_id`): a replay opens the same run.
  The run takes the kept submission's spec, its debounce key dropped (:func:`run_of`).
- **Singleton**: the key's current job runs under its own id; while it has not ended, a
  new submission is dropped (DROP) or waits as the next, replacing an earlier waiting one
  (REPLACE, :func:`singleton_verdict`). A job that went through its key's partition
  carries :data:`SINGLETON_LABEL`, so it is not routed there again, and the status
  processor tells the key's partition when it ends (SingletonEnded).

Pure: no Kafka, no clock.
"""

from __future__ import annotations

from enum import StrEnum

from jobstream._pipeline.model.idempotency import idempotent_job_id
from jobstream._pipeline.model.keys import debounce_delay_ms, scoped
from jobstream._pipeline.model.labels import SINGLETON_LABEL
from jobstream._pipeline.model.records import (
    DebounceKeep,
    Event,
    JobKeys,
    JobSubmitted,
    SingletonEnded,
    SingletonMode,
    evolve,
)
from jobstream._pipeline.partitioning import java_partition, partition_key

DEBOUNCE = "debounce"
SINGLETON = "singleton"
DEBOUNCE_RUN_PREFIX = "debounce:"
"""A debounce run's idempotency key is this and its window's first submission's job id."""


def collapse_of(job: JobSubmitted) -> tuple[str, str] | None:
    """(kind, key) of a submission its key's partition decides on; None for any other
    (no debounce or singleton key, or a singleton job its key's timers already took)."""
    keys = job.spec.job_keys
    if keys is None:
        return None
    if keys.debounce_key is not None:
        return DEBOUNCE, keys.debounce_key
    key = keys.singleton_key
    if key is not None and job.spec.labels.get(SINGLETON_LABEL) != key:
        return SINGLETON, key
    return None


def collapse_key(owner: str, kind: str, key: str) -> bytes:
    """The record key (and store identity) of one owner's debounce or singleton key."""
    return f"{kind}:{scoped(owner, key)}".encode()


def intake_key(job: JobSubmitted) -> bytes:
    """The key of a submission's record on jobs.intake: its collapse key for a debounced or
    singleton submission, else its job's (:func:`partition_key`)."""
    collapse = collapse_of(job)
    if collapse is None:
        return partition_key(job.job_id, job.workflow_id)
    return collapse_key(job.spec.owner, *collapse)


def meeting_partition(job: JobSubmitted, partitions: int) -> int | None:
    """The jobs.intake partition a debounced or singleton submission is decided on."""
    collapse = collapse_of(job)
    if collapse is None:
        return None
    return java_partition(collapse_key(job.spec.owner, *collapse), partitions)


# -- debounce -------------------------------------------------------------------------------


def debounce_run_id(owner: str, first_job_id: str) -> tuple[str, str]:
    """(job id, idempotency key) of the run of the window ``first_job_id`` opened: the same
    for a replay of that submission, so the timers keep the first run of the id."""
    idempotency_key = DEBOUNCE_RUN_PREFIX + first_job_id
    return idempotent_job_id(owner, idempotency_key), idempotency_key


def window_close_ms(keys: JobKeys, *, opened_ms: int, now_ms: int) -> int:
    """When a window opened at ``opened_ms`` closes after a submission at ``now_ms``: one
    ``window_ms`` of quiet after it, and never past the maximum delay after the first."""
    return min(now_ms + keys.debounce_window_ms, opened_ms + debounce_delay_ms(keys))


def kept(current: JobSubmitted, new: JobSubmitted) -> JobSubmitted:
    """The submission whose spec a window's run takes after ``new`` joins one that keeps
    ``current``: the new one's ``keep`` decides (LAST: the new one; FIRST: the current)."""
    keys = new.spec.job_keys
    if keys is not None and keys.debounce_keep == DebounceKeep.FIRST:
        return current
    return new


def run_of(kept_job: JobSubmitted, *, run_id: str, idempotency_key: str,
           now_ms: int) -> JobSubmitted:  # fmt: skip
    """The JobSubmitted of a window's run: the kept submission's spec, under the run's id,
    without its debounce key (not debounced again), its other keys kept."""
    keys = kept_job.spec.job_keys
    if keys is not None:
        keys = evolve(keys, debounce_key=None, debounce_window_ms=0, debounce_max_ms=None,
                      debounce_keep=DebounceKeep.LAST)  # fmt: skip
        if not any((keys.concurrency_key, keys.rate_key, keys.singleton_key)):
            keys = None
    spec = evolve(kept_job.spec, job_keys=keys)
    return JobSubmitted(job_id=run_id, workflow_id=None, idempotency_key=idempotency_key,
                        submitted_at_ms=now_ms, spec=spec)  # fmt: skip


# -- singleton ------------------------------------------------------------------------------


class Verdict(StrEnum):
    """What a singleton submission's key's timers do with it."""

    RUN = "RUN"
    """The key is free: the submission runs now, as the key's current job."""
    DROP = "DROP"
    """The key is busy (DROP): COLLAPSED, naming the current job."""
    WAIT = "WAIT"
    """The key is busy (REPLACE): it waits as the next, replacing an earlier waiting one."""
    REPEAT = "REPEAT"
    """The current or the waiting job again (a replayed record): nothing to do."""


def singleton_verdict(job: JobSubmitted, *, current: str | None, waiting: str | None) -> Verdict:
    """What becomes of ``job`` on its key's partition, whose current job is ``current``
    (None: the key is free) and whose next is ``waiting``."""
    if job.job_id in (current, waiting):
        return Verdict.REPEAT
    if current is None:
        return Verdict.RUN
    keys = job.spec.job_keys
    if keys is not None and keys.singleton_mode == SingletonMode.REPLACE:
        return Verdict.WAIT
    return Verdict.DROP


def admitted(job: JobSubmitted, key: str) -> JobSubmitted:
    """``job`` marked as taken by its singleton key's timers (:data:`SINGLETON_LABEL`)."""
    labels = {**job.spec.labels, SINGLETON_LABEL: key}
    return evolve(job, spec=evolve(job.spec, labels=labels))


def singleton_ended(job_id: str, owner: str, key: str, state: str,
                    at_ms: int) -> tuple[bytes, Event]:  # fmt: skip
    """The record key and value on jobs.intake that tell a singleton key's timers that its
    job ended (or never became one: its id was known already)."""
    ended = SingletonEnded(job_id=job_id, owner=owner, singleton_key=key, state=state,
                           ended_at_ms=at_ms)  # fmt: skip
    return collapse_key(owner, SINGLETON, key), Event.of(ended)
