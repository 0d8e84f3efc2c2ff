"""Due jobs held back by rate limits and rate keys (docs/limits.md, docs/keys.md).

A due job that a limit (its type's, its owner's, both's) or its rate key has no token for
waits in that limit's queue in the timers' store (``held_by``), in due order, and fires
when a token comes: its FIRED then carries ``throttled_ms``, the wait, apart from its
lateness. A job held on its rate key is announced once, when first held (HELD,
``rate:<key>``); one held by a limit only through ``throttled_ms``, as before keys.
"""

from __future__ import annotations

from jobstream._pipeline.limits.keyed import RateKey
from jobstream._pipeline.limits.throttle import Throttle
from jobstream._pipeline.model.lifecycle import LifecycleKind
from jobstream._pipeline.runtime.processor import Output
from jobstream._pipeline.timers.entry import Firing, FiringEntry
from jobstream._pipeline.timers.state import TimerState
from jobstream._pipeline.timers.workflow import Lifecycle


class RateHolds:
    def __init__(self, throttle: Throttle, lifecycle: Lifecycle) -> None:
        self.throttle = throttle
        self.lifecycle = lifecycle

    def hold(self, state: TimerState, entry: Firing, now_ms: int) -> list[Output] | None:
        """Put a due job in the queue of the limit that has no token for it, and return
        what that tells (a HELD naming a rate key); None when every limit that applies gave
        one (and the job is to fire now)."""
        job_type = entry.spec.job_type
        key = self.throttle.admit(entry.owner, job_type, now_ms, entry.spec.job_keys)
        if key is None:
            return None
        state.put(entry.evolve(held_by=key.id, held_at_ms=now_ms))
        state.held.append(job_type)
        if not isinstance(key, RateKey):
            return []  # a type's or an owner's limit: its wait shows as throttled_ms only
        return [self.lifecycle(LifecycleKind.HELD, entry.job, now_ms, held_by=str(key),
                               scheduled_at_ms=entry.due_ms,
                               detail=f"held to the rate of key {key.key!r} "
                                      f"({key.rate:g}/s)")]  # fmt: skip

    def release(self, state: TimerState, now_ms: int, limit: int) -> list[Firing]:
        """The held jobs that may fire now: each limit's queue in order, while its tokens
        last. A job another limit still holds moves to that limit's queue."""
        ready: list[Firing] = []
        for limit_id in state.held_limits():
            for entry in state.held_by(limit_id):
                if len(ready) >= limit:
                    return ready
                if not isinstance(entry, FiringEntry):  # only jobs are held
                    continue
                key = self.throttle.admit(entry.owner, entry.spec.job_type, now_ms,
                                          entry.spec.job_keys)  # fmt: skip
                if key is None:
                    ready.append(entry)
                elif key.id != limit_id:
                    state.put(entry.evolve(held_by=key.id))
                else:
                    break
        return ready
