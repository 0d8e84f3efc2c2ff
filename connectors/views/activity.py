"""What the pipeline did lately, from the jobs.events records the view updater folds:
firings, starts and ends per second, and fire and start lateness percentiles, in buckets
of a few seconds over the last minutes, per owner (the dashboard's overview).

Kept in memory only: a restarted API shows activity from its restart on (records older
than the window, read again while the views catch up, are not counted). Fire lateness is
the ``lateness_ms`` the timers put on FIRED; start lateness is when a run's handler began
minus the scheduled time its execution id carries. A worker tells when its handler began
(``launched_at_ms``) on the run's HEARTBEATs and on the event that ends it, after its
STARTED, which commits with the claim (for a run claimed ahead, at its due instant,
however late the handler began): the first such event replaces the STARTED's figure with
the true one, in the bucket of the launch. A run of a worker that does not tell keeps its
STARTED's figure; a run not ended and not yet a heartbeat into its handler shows its
STARTED's figure until then.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from jobstream._pipeline.model.lifecycle import LifecycleKind
from jobstream._pipeline.model.records import JobLifecycle
from jobstream._pipeline.scheduling.ids import scheduled_ms_of

ENDED = frozenset({LifecycleKind.SUCCEEDED, LifecycleKind.FAILED, LifecycleKind.TIMED_OUT,
                   LifecycleKind.LOST})  # fmt: skip


class Counted(NamedTuple):
    """What the activity reads of a JobLifecycle (a view updater in a process of its own
    sends these as JSON lists: connectors/views/process.py)."""

    at_ms: int
    kind: str
    owner: str
    lateness_ms: int | None
    execution_id: str | None
    launched_at_ms: int | None = None


@dataclass
class _Bucket:
    fired: int = 0
    started: int = 0
    ended: int = 0
    fire_lateness_ms: list[int] = field(default_factory=list)
    start_lateness_ms: dict[str, int] = field(default_factory=dict)
    """By execution id: a launch's figure replaces its STARTED's (in this bucket or an
    earlier one)."""


def percentile(values: list[int], q: float) -> int | None:
    """The nearest-rank ``q`` quantile (0..1) of ``values``; None when there are none."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]


class Activity:
    """Per-owner buckets of ``bucket_ms`` over the last ``window_ms``; thread-safe."""

    def __init__(self, *, bucket_ms: int = 5000, window_ms: int = 600_000,
                 samples: int = 1000) -> None:  # fmt: skip
        self.bucket_ms = bucket_ms
        self.window_ms = window_ms
        self.samples = samples
        """Lateness samples kept per bucket (the first ones: enough for a p99 of a view)."""
        self._buckets: dict[tuple[str, int], _Bucket] = {}
        self._lock = threading.Lock()

    def record(self, event: JobLifecycle, now_ms: int) -> None:
        """Count one lifecycle event, if it happened within the window."""
        self.count(Counted(event.at_ms, event.kind, event.owner, event.lateness_ms,
                           event.execution_id, event.launched_at_ms), now_ms)  # fmt: skip

    def count(self, event: Counted, now_ms: int) -> None:
        """Count what :meth:`record` reads of a lifecycle event."""
        at = event.at_ms or 0
        if at < now_ms - self.window_ms:
            return
        kind = event.kind
        if event.launched_at_ms is not None and event.execution_id:
            self._launched(event.owner, event.execution_id, event.launched_at_ms, now_ms)
        if kind not in (LifecycleKind.FIRED, LifecycleKind.STARTED) and kind not in ENDED:
            return
        with self._lock:
            bucket = self._buckets.setdefault((event.owner, at - at % self.bucket_ms),
                                              _Bucket())  # fmt: skip
            if kind == LifecycleKind.FIRED:
                bucket.fired += 1
                lateness = event.lateness_ms
                if lateness is not None and len(bucket.fire_lateness_ms) < self.samples:
                    bucket.fire_lateness_ms.append(max(0, int(lateness)))
            elif kind == LifecycleKind.STARTED:
                bucket.started += 1
                execution_id = event.execution_id
                scheduled = scheduled_ms_of(execution_id)
                if (scheduled is not None and execution_id
                        and len(bucket.start_lateness_ms) < self.samples):  # fmt: skip
                    bucket.start_lateness_ms.setdefault(execution_id, max(0, at - scheduled))
            else:
                bucket.ended += 1
            self._expire(now_ms)

    def _launched(self, owner: str, execution_id: str, launched_ms: int, now_ms: int) -> None:
        """A run's handler began at ``launched_ms``: its start lateness, in the bucket of its
        launch, instead of its STARTED's (whose instant lies between its due instant and its
        launch: those buckets are searched)."""
        scheduled = scheduled_ms_of(execution_id)
        if scheduled is None or launched_ms < now_ms - self.window_ms:
            return
        late, size = max(0, launched_ms - scheduled), self.bucket_ms
        start = launched_ms - launched_ms % size
        first = max(scheduled - scheduled % size, now_ms - self.window_ms - size)
        with self._lock:
            for at in range(start, first - 1, -size):
                held = self._buckets.get((owner, at))
                if held is not None and held.start_lateness_ms.pop(execution_id, None) is not None:
                    break
            bucket = self._buckets.setdefault((owner, start), _Bucket())
            if (execution_id in bucket.start_lateness_ms
                    or len(bucket.start_lateness_ms) < self.samples):  # fmt: skip
                bucket.start_lateness_ms[execution_id] = late

    def _expire(self, now_ms: int) -> None:
        oldest = now_ms - self.window_ms
        for key in [key for key in self._buckets if key[1] + self.bucket_ms < oldest]:
            del self._buckets[key]

    def series(self, owner: str | None, now_ms: int) -> list[dict[str, Any]]:
        """Every bucket of the window, oldest first: its start, the per-second rates and
        the lateness p50 and p99 (ms; None without a sample). ``owner`` None: all."""
        first = now_ms - self.window_ms
        first -= first % self.bucket_ms
        merged: dict[int, _Bucket] = {}
        starts: dict[int, list[int]] = {}
        with self._lock:
            for (who, start), bucket in self._buckets.items():
                if start < first or (owner is not None and who != owner):
                    continue
                into = merged.setdefault(start, _Bucket())
                into.fired += bucket.fired
                into.started += bucket.started
                into.ended += bucket.ended
                into.fire_lateness_ms += bucket.fire_lateness_ms
                starts.setdefault(start, []).extend(bucket.start_lateness_ms.values())
        seconds = self.bucket_ms / 1000
        rows = []
        for start in range(first, now_ms + 1, self.bucket_ms):
            bucket, late = merged.get(start, _Bucket()), starts.get(start, [])
            rows.append({
                "at_ms": start,
                "fired_per_s": bucket.fired / seconds,
                "started_per_s": bucket.started / seconds,
                "ended_per_s": bucket.ended / seconds,
                "fire_lateness_p50_ms": percentile(bucket.fire_lateness_ms, 0.5),
                "fire_lateness_p99_ms": percentile(bucket.fire_lateness_ms, 0.99),
                "start_lateness_p50_ms": percentile(late, 0.5),
                "start_lateness_p99_ms": percentile(late, 0.99),
            })  # fmt: skip
        return rows
