"""The owners' quotas, enforced where they bite: at a submission and at a live stream.

Counted in this API process:

- submissions: a token bucket per token and owner it acts for, at the owner's
  ``submit_rate`` and ``submit_burst``; a batch takes one token per job, all or none,
  and a refusal says when to come back (``Retry-After``);
- live streams open, per token.

Counted from the views: the owner's job types (the types of every job of the owner the
views hold, ended or not) and its pending jobs (those not ended). The views read
jobs.intake a moment after the API sends to it, so what this process accepted lately
counts too: its job types for ``RECENT_TYPES_S`` (a set: nothing counts twice), and each
job until the views hold it (then it counts there), or at most ``RECENT_JOBS_S`` (the
views stalled: they count on their own again). Jobs are looked for in the order they
were accepted, up to the first the views do not hold yet, so each is looked up about
once; one the views hold before an earlier one counts twice for that moment: the
pending quota errs towards refusing, never towards letting a burst through.

Each API process counts on its own: a token that spreads its requests over n processes
may submit n times its rate and hold n times its streams.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from jobstream._connectors.api.auth import Principal
from jobstream._connectors.api.errors import ApiError
from jobstream._connectors.views import ViewStore, counts, layout
from jobstream._pipeline.limits.bucket import TokenBucket
from jobstream._pipeline.model.lifecycle import TERMINAL_STATES
from jobstream._pipeline.quotas.model import Quota, first_new_type_over
from jobstream._pipeline.quotas.topic import QuotaBoard
from jobstream._pipeline.serde import Event
from jobstream._pipeline.workflows.commands import step_ids

RECENT_JOBS_S = 60.0
RECENT_TYPES_S = 600.0
_ENDED = frozenset(state.value for state in TERMINAL_STATES)


@dataclass(frozen=True)
class Submission:
    """One job a request submits: whose, of which type, and the field naming its type."""

    owner: str
    job_type: str
    field: str
    job_id: str


def submissions_of(events: Iterable[Event], *, batch: bool = False) -> Iterator[Submission]:
    """The jobs that ``events`` submit (JobSubmitted, a WorkflowSubmitted's steps)."""
    for i, event in enumerate(events):
        if event.name == "JobSubmitted":
            spec = event.data.spec
            where = f"jobs[{i}].spec.job_type" if batch else "spec.job_type"
            yield Submission(spec.owner, spec.job_type, where, event.data.job_id)
        elif event.name == "WorkflowSubmitted":
            ids = step_ids(event)
            for j, step in enumerate(event.data.steps):
                yield Submission(event.data.owner, step.spec.job_type,
                                 f"steps.{j}.spec.job_type", ids[step.name])  # fmt: skip


def refused(quota: str, detail: str, field: str | None = None,
            retry_after_s: int | None = None) -> ApiError:  # fmt: skip
    headers = {} if retry_after_s is None else {"Retry-After": str(retry_after_s)}
    return ApiError(429, f"quota {quota}: {detail}", field, headers, quota=quota)


@dataclass(eq=False)
class Recent:
    """The jobs of one owner one request brought that the views may not hold yet."""

    at: float
    job_ids: deque[str]


@dataclass
class Reservation:
    """What an admitted request counts in the recent jobs and types, taken back if its
    records are not sent."""

    jobs: list[tuple[str, Recent]] = field(default_factory=list)
    types: list[tuple[str, str]] = field(default_factory=list)


@dataclass(frozen=True)
class Held:
    """What an owner holds, as the quotas count it."""

    job_types: frozenset[str]
    pending_jobs: int


class QuotaGate:
    def __init__(self, defaults: Quota, board: QuotaBoard | None = None, *,
                 clock: Callable[[], float] = time.monotonic) -> None:  # fmt: skip
        self.defaults = defaults
        self.board = board or QuotaBoard()
        self.clock = clock
        self._lock = threading.Lock()  # /me reads on the thread pool; the rest on the loop
        self._buckets: dict[tuple[str, str], TokenBucket] = {}
        self._streams: dict[tuple[str, str | None], int] = {}
        self._recent_jobs: dict[str, deque[Recent]] = {}
        """Owner -> the jobs accepted that the views may not hold yet, oldest first."""
        self._recent_types: dict[str, dict[str, float]] = {}
        """Owner -> job type -> last accepted at."""

    def quota(self, owner: str | None) -> Quota:
        """The quotas of ``owner``: its override over the defaults (an admin: the defaults)."""
        override = None if owner is None else self.board.overrides.get(owner)
        return self.defaults if override is None else override.over(self.defaults)

    # -- submissions ---------------------------------------------------------------------

    def admit(self, who: Principal | None, submissions: Sequence[Submission],
              store: ViewStore) -> Reservation:  # fmt: skip
        """Count ``submissions`` in, or raise a 429 naming the first quota they pass (and
        count nothing). ``who`` None: no token's rate applies (a workflow)."""
        by_owner: dict[str, list[Submission]] = {}
        for submission in submissions:
            by_owner.setdefault(submission.owner, []).append(submission)
        for owner, jobs in by_owner.items():
            self._check_held(owner, jobs, store)
        if who is not None:
            self._take(who, by_owner)
        return self._reserve(by_owner)

    def release(self, reservation: Reservation) -> None:
        """Take back what :meth:`admit` counted for records that were not sent."""
        with self._lock:
            for owner, entry in reservation.jobs:
                recent = self._recent_jobs.get(owner)
                if recent is not None and entry in recent:
                    recent.remove(entry)
            for owner, job_type in reservation.types:
                self._recent_types.get(owner, {}).pop(job_type, None)

    def held(self, owner: str, store: ViewStore) -> Held:
        found = counts(store, owner)
        types = set(found.by_type)
        pending = sum(n for state, n in found.by_state.items() if state not in _ENDED)
        now = self.clock()
        with self._lock:
            self._prune(owner, now, store)
            types.update(self._recent_types.get(owner, ()))
            pending += sum(len(recent.job_ids) for recent in self._recent_jobs.get(owner, ()))
        return Held(frozenset(types), pending)

    def _check_held(self, owner: str, jobs: list[Submission], store: ViewStore) -> None:
        quota = self.quota(owner)
        assert quota.job_types is not None and quota.pending_jobs is not None
        held = self.held(owner, store)
        index = first_new_type_over(held.job_types, (job.job_type for job in jobs),
                                    quota.job_types)  # fmt: skip
        if index is not None:
            job = jobs[index]
            raise refused("job_types", f"owner {owner!r} may have jobs of at most "
                          f"{quota.job_types} job types and has {len(held.job_types)}; "
                          f"{job.job_type!r} would be one more", job.field)  # fmt: skip
        if held.pending_jobs + len(jobs) > quota.pending_jobs:
            raise refused("pending_jobs", f"owner {owner!r} may hold at most "
                          f"{quota.pending_jobs} jobs not ended and holds "
                          f"{held.pending_jobs}; this request brings {len(jobs)}")  # fmt: skip

    def _take(self, who: Principal, by_owner: dict[str, list[Submission]]) -> None:
        now_ms = int(self.clock() * 1000)
        taking = []
        with self._lock:
            for owner, jobs in by_owner.items():
                quota = self.quota(owner)
                bucket = self._bucket(who.token, owner, quota, now_ms)
                if not bucket.available(now_ms, len(jobs)):
                    wait_s = max(1, math.ceil(bucket.wait_ms(now_ms, len(jobs)) / 1000))
                    raise refused("submit_rate", f"owner {owner!r} may submit "
                                  f"{quota.submit_rate:g} jobs a second per token (at once: "
                                  f"{quota.submit_burst}); retry in {wait_s} s",
                                  retry_after_s=wait_s)  # fmt: skip
                taking.append((bucket, len(jobs)))
            for bucket, count in taking:
                bucket.take(now_ms, count)

    def _bucket(self, token: str, owner: str, quota: Quota, now_ms: int) -> TokenBucket:
        assert quota.submit_rate is not None and quota.submit_burst is not None
        rate, burst = quota.submit_rate, float(quota.submit_burst)
        bucket = self._buckets.get((token, owner))
        if bucket is None:
            bucket = self._buckets[(token, owner)] = TokenBucket.full(rate, burst, now_ms)
        elif bucket.rate != rate or bucket.capacity != burst:
            bucket.rescale(rate, burst, now_ms)
        return bucket

    def _reserve(self, by_owner: dict[str, list[Submission]]) -> Reservation:
        reservation = Reservation()
        now = self.clock()
        with self._lock:
            for owner, jobs in by_owner.items():
                entry = Recent(now, deque(job.job_id for job in jobs))
                self._recent_jobs.setdefault(owner, deque()).append(entry)
                reservation.jobs.append((owner, entry))
                types = self._recent_types.setdefault(owner, {})
                for job in jobs:
                    if job.job_type not in types:
                        reservation.types.append((owner, job.job_type))
                    types[job.job_type] = now
        return reservation

    def _prune(self, owner: str, now: float, store: ViewStore) -> None:
        """Forget the jobs the views hold, the oldest first up to one they do not hold
        yet, and the types not submitted for a while."""
        recent = self._recent_jobs.get(owner)
        while recent:
            oldest = recent[0]
            if oldest.at >= now - RECENT_JOBS_S:
                while oldest.job_ids and store.get(layout.doc_key(oldest.job_ids[0])):
                    oldest.job_ids.popleft()
                if oldest.job_ids:
                    break
            recent.popleft()
        types = self._recent_types.get(owner)
        if types:
            for job_type in [t for t, at in types.items() if at < now - RECENT_TYPES_S]:
                del types[job_type]

    # -- streams -------------------------------------------------------------------------

    def open_stream(self, who: Principal) -> Callable[[], None]:
        """Count a live stream of ``who``'s token, or raise a 429 when its quota is full;
        the function returned frees the slot (once, however often it is called)."""
        limit = self.quota(who.owner).streams
        assert limit is not None
        key = (who.token, who.owner)
        with self._lock:
            if self._streams.get(key, 0) >= limit:
                raise refused("streams", f"a token may hold at most {limit} live streams "
                                         "open, and this one holds them all")  # fmt: skip
            self._streams[key] = self._streams.get(key, 0) + 1
        freed = threading.Event()

        def free() -> None:
            with self._lock:
                if freed.is_set():
                    return
                freed.set()
                left = self._streams.get(key, 1) - 1
                if left > 0:
                    self._streams[key] = left
                else:
                    self._streams.pop(key, None)

        return free

    # -- what an owner uses --------------------------------------------------------------

    def usage(self, owner: str, store: ViewStore, token: str | None = None) -> dict[str, Any]:
        """``owner``'s quotas and what it uses of each; the rate's tokens left and the
        streams open are ``token``'s when given, else the streams of every token."""
        quota = self.quota(owner)
        held = self.held(owner, store)
        now_ms = int(self.clock() * 1000)
        with self._lock:
            if token is None:
                available = None
                streams = sum(n for (_, whose), n in self._streams.items() if whose == owner)
            else:
                bucket = self._buckets.get((token, owner))
                if bucket is None:
                    available = quota.submit_burst
                else:
                    bucket.refill(now_ms)
                    available = max(0, math.floor(bucket.tokens))
                streams = self._streams.get((token, owner), 0)
        override = self.board.overrides.get(owner)
        return {
            "owner": owner,
            "override": {} if override is None else override.set_fields(),
            "job_types": {"used": len(held.job_types), "limit": quota.job_types},
            "pending_jobs": {"used": held.pending_jobs, "limit": quota.pending_jobs},
            "submit_rate": {"per_s": quota.submit_rate, "burst": quota.submit_burst,
                            "available": available},
            "streams": {"used": streams, "limit": quota.streams},
        }  # fmt: skip
