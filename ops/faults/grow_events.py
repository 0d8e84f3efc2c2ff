"""A grow of jobs.events under load, and what the jobs saw of it.

The pipeline runs as processes (timers, one status processor, the retry router, a worker
with 0.5 s heartbeats and 4 s leases, whose producers keep the old partition count for
minutes). Jobs that ran to their end fill the status stores;
long runs (and three that last until their worker dies) run across the grow; short jobs
keep coming. jobs.events grows (``jobstream topics grow --events-partitions``'s function)
and a second status processor joins; then the worker is killed and another takes over.
The tally reads jobs.events and jobs.status: every job's end, the LOST and DUPLICATE events,
and how long statuses took to follow the events while the stores handed jobs over.

The broker test (tests/test_grow_events.py) runs it at CI size; ``jobstream faults
grow-events`` at full size (docs/scaling.md gives the figures).
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jobstream._ops.faults.grow import settings_of_a_run
from jobstream._ops.faults.sleep_app import JOB_TYPE
from jobstream._ops.kafka.ports import free_ports
from jobstream._ops.stack import YIELDING, Component, Stack, components, running_stack, worker
from jobstream._pipeline.config import Settings
from jobstream._pipeline.growth.strays import is_forwarded
from jobstream._pipeline.jobs.client import JobClient
from jobstream._pipeline.kafka.scan import TopicScan
from jobstream._pipeline.model.idempotency import idempotent_job_id
from jobstream._pipeline.model.job import JobRequest
from jobstream._pipeline.partitioning import java_partition
from jobstream._pipeline.serde import JobStatus, make_serde
from jobstream._pipeline.status.grow import grow_events_topics
from jobstream._pipeline.status.query import read_statuses
from jobstream._pipeline.topics import Topics

log = logging.getLogger(__name__)

APP = "jobstream._ops.faults.sleep_app"
OWNER = "grow-events"
LEASE_S = 4
BEAT = ("--heartbeat", "500ms")
SHORT_S = 0.2
STALE = (("JOBSTREAM_LIBRDKAFKA", '{"topic.metadata.refresh.interval.ms": "300000"}'),)
"""The first worker's clients keep librdkafka's 5-minute metadata refresh (a worker of an
older version, or settings of a user's own): its events keep the old count after the grow,
and reach their jobs' new partitions forwarded."""
BATCH = 5_000


@dataclass(frozen=True)
class EventsGrowSize:
    finished: int
    """Jobs run to their end before the grow: records the stores hold (and hand over)."""
    long: int
    """Runs of ``long_s`` started before the grow, heartbeating across it."""
    load_per_s: int
    """Short jobs submitted each second, from a second before the grow to ``window_s`` after."""
    long_s: float = 8.0
    window_s: float = 4.0
    old: int = 6
    new: int = 12


@dataclass
class EventsGrowTally:
    jobs: int = 0
    handed_over: int = 0
    forwarded: int = 0
    late: int = 0
    """Forwarded events that came after newer ones of their job (not applied)."""
    not_succeeded: list[str] = field(default_factory=list)
    retried: list[str] = field(default_factory=list)
    """Jobs other than the killed runs' and the failing ones that needed another attempt."""
    failing_off: list[str] = field(default_factory=list)
    """Jobs whose first attempt failed (around the grow) not retried exactly once."""
    lost_by_grow: list[str] = field(default_factory=list)
    """Jobs other than the killed runs' with a LOST event."""
    duplicates: list[str] = field(default_factory=list)
    victims_lost: dict[str, int] = field(default_factory=dict)
    """LOST events of each run killed after the grow (one each expected)."""
    victims_moved: int = 0
    lags_ms: list[int] = field(default_factory=list)
    """For the short jobs: their status' time minus their SUCCEEDED's."""
    wall_s: float = 0.0

    @property
    def ok(self) -> bool:
        return not (self.not_succeeded or self.retried or self.failing_off or self.lost_by_grow
                    or self.duplicates or set(self.victims_lost.values()) - {1})  # fmt: skip

    def summary(self) -> dict[str, Any]:
        lags = sorted(self.lags_ms) or [0]
        return {
            "jobs": self.jobs, "handed_over": self.handed_over, "forwarded": self.forwarded,
            "late_forwarded": self.late,
            "not_succeeded": len(self.not_succeeded), "retried": len(self.retried),
            "failing_not_retried_once": len(self.failing_off),
            "lost_by_grow": len(self.lost_by_grow), "duplicates": len(self.duplicates),
            "killed_runs_lost": self.victims_lost, "killed_runs_moved": self.victims_moved,
            "status_lag_p50_ms": lags[len(lags) // 2],
            "status_lag_p99_ms": lags[min(len(lags) - 1, len(lags) * 99 // 100)],
            "status_lag_max_ms": lags[-1], "wall_s": round(self.wall_s, 1),
        }  # fmt: skip


def moves(job_id: str, old: int, new: int) -> bool:
    return java_partition(job_id.encode(), old) != java_partition(job_id.encode(), new)


def victim_keys(old: int, new: int) -> list[str]:
    """Idempotency keys of runs killed after the grow: two whose job moves, one that stays."""
    keys = [f"victim-{n}" for n in range(100)]
    moved = [k for k in keys if moves(idempotent_job_id(OWNER, k), old, new)][:2]
    stays = [k for k in keys if not moves(idempotent_job_id(OWNER, k), old, new)][:1]
    return moved + stays


def request(key: str | None = None, **params: object) -> JobRequest:
    return JobRequest(job_type=JOB_TYPE, owner=OWNER, params=params, idempotency_key=key)


class EventsGrowRun:
    """One run on ``settings``' topics (jobs.events with ``size.old`` partitions)."""

    def __init__(self, settings: Settings, home: Path, size: EventsGrowSize,
                 say: Callable[[str], object] = log.info) -> None:  # fmt: skip
        self.settings, self.home, self.size, self.say = settings, home, size, say
        self.topics = Topics(settings)
        self.long: list[str] = []
        self.short: list[str] = []
        self.victims: list[str] = []
        self.finished: list[str] = []
        self.failing: list[str] = []
        """Short jobs whose first attempt fails: a failure routed once, grow or not."""

    def run(self) -> EventsGrowTally:
        started = time.monotonic()
        base = free_ports(6)
        slots = self.size.long + 3 + max(8, self.size.load_per_s)
        parts = [*components(base, app=APP, job_types=(), lease_s=LEASE_S),
                 worker(JOB_TYPE, "w0", base + 3, app=APP, concurrency=slots, extra=BEAT,
                        env=STALE)]
        second = Component("status-processor-1", ("status-processor", "--instance-id", "1",
                                                  "--lease", f"{LEASE_S}s"), base + 4, YIELDING)
        spare = worker(JOB_TYPE, "w1", base + 5, app=APP, concurrency=8, extra=BEAT)
        with running_stack(self.settings, self.home, parts) as stack, \
                JobClient(self.settings) as client:  # fmt: skip
            self._run(stack, client, second, spare)
            tally = self._tally(stack)
        tally.wall_s = time.monotonic() - started
        return tally

    def _run(self, stack: Stack, client: JobClient, second: Component, spare: Component) -> None:
        size = self.size
        for at in range(0, size.finished, BATCH):
            count = min(BATCH, size.finished - at)
            self.finished += client.submit_many(request(sleep_s=0) for _ in range(count))
        self._until(self.finished, {"SUCCEEDED"}, "the first jobs ended",
                    timeout_s=60 + size.finished / 100)  # fmt: skip
        self.victims = client.submit_many(request(key, first_attempt_sleep_s=600, sleep_s=0)
                                          for key in victim_keys(size.old, size.new))
        self.long = client.submit_many(request(sleep_s=size.long_s) for _ in range(size.long))
        self._until(self.victims + self.long, {"RUNNING"}, "the long runs started")
        stop = threading.Event()
        loader = threading.Thread(target=self._load, args=(client, stop), daemon=True)
        loader.start()
        try:
            stop.wait(1)
            self.say(f"growing jobs.events from {size.old} to {size.new} partitions")
            grow_events_topics(self.settings, size.new)
            stack.launch([second])
            stop.wait(size.window_s)
        finally:
            stop.set()
            loader.join(30)
        self._until(self.long + self.short + self.failing, {"SUCCEEDED"},
                    "the long and short jobs ended",
                    timeout_s=60 + size.long_s)  # fmt: skip
        self.say("killing the worker; the runs it leaves must be declared lost")
        stack.kill("worker-w0")
        stack.launch([spare])
        self._until(self.victims, {"SUCCEEDED"}, "the killed runs retried", timeout_s=90)

    def _load(self, client: JobClient, stop: threading.Event) -> None:
        per_tick = max(1, self.size.load_per_s // 4)
        while not stop.wait(0.25):
            self.short += client.submit_many(request(sleep_s=SHORT_S) for _ in range(per_tick))
            self.failing += client.submit_many([request(sleep_s=SHORT_S, fail_first=True)])

    def _until(self, ids: list[str], states: set[str], what: str,
               timeout_s: float = 60) -> dict[str, JobStatus]:  # fmt: skip
        deadline = time.monotonic() + timeout_s
        while True:
            found = read_statuses(self.settings, owner=OWNER)
            if all(j in found and found[j].state in states for j in ids):
                return found
            if time.monotonic() > deadline:
                missing = [j for j in ids if j not in found or found[j].state not in states]
                raise TimeoutError(f"{what}: {len(missing)} of {len(ids)} not yet "
                                   f"{sorted(states)} after {timeout_s:.0f} s")  # fmt: skip
            time.sleep(0.3)

    def _tally(self, stack: Stack) -> EventsGrowTally:
        statuses = read_statuses(self.settings, owner=OWNER)
        kinds, succeeded_at = self._events()
        victims = set(self.victims)
        everyone = self.finished + self.long + self.short + self.victims + self.failing
        tally = EventsGrowTally(jobs=len(everyone))
        failing = set(self.failing)
        for job_id in everyone:
            status, seen = statuses.get(job_id), kinds.get(job_id, Counter())
            if status is None or status.state != "SUCCEEDED":
                tally.not_succeeded.append(job_id)
            elif job_id in failing:
                if status.attempt != 2 or seen["RETRY_SCHEDULED"] != 1:
                    tally.failing_off.append(job_id)
            elif job_id not in victims and status.attempt != 1:
                tally.retried.append(job_id)
            if seen["DUPLICATE"]:
                tally.duplicates.append(job_id)
            if job_id in victims:
                tally.victims_lost[job_id] = seen["LOST"]
            elif seen["LOST"]:
                tally.lost_by_grow.append(job_id)
        tally.victims_moved = sum(moves(j, self.size.old, self.size.new) for j in self.victims)
        for job_id in self.short:
            status = statuses.get(job_id)
            if status is not None and job_id in succeeded_at:
                tally.lags_ms.append(status.updated_at_ms - succeeded_at[job_id])
        for name in ("status-processor", "status-processor-1"):
            text = (stack.logs / f"{name}.log").read_text()
            tally.handed_over += _last(text, "handed_over")
            tally.forwarded += _last(text, "forwarded")
            tally.late += _last(text, "late")
        return tally

    def _events(self) -> tuple[dict[str, Counter[str]], dict[str, int]]:
        """Each job's event kinds on jobs.events, and when its first SUCCEEDED was sent; a
        grow's forwarded copies are passed over (their originals count)."""
        _, deserialize = make_serde(self.settings.schema_registry_url)
        kinds: dict[str, Counter[str]] = {}
        succeeded: dict[str, int] = {}
        with TopicScan(self.settings, self.topics.events) as scan:
            for batch in scan:
                for message in batch:
                    if is_forwarded(message):
                        continue
                    data = deserialize(message.value()).data
                    kinds.setdefault(data.job_id, Counter())[data.kind] += 1
                    if data.kind == "SUCCEEDED":
                        succeeded.setdefault(data.job_id, data.at_ms)
        return kinds, succeeded


def _last(text: str, counter: str) -> int:
    """The last value of a counter in a process's stats lines (0 if it logged none)."""
    found = re.findall(rf'"{counter}":(\d+)', text)
    return int(found[-1]) if found else 0


def run_events_grow(folder: Path, *, finished: int, long: int, load: int, partitions: int,
                    grow_to: int) -> dict[str, Any]:  # fmt: skip
    """``jobstream faults grow-events``: a run on the configured broker, topics of its own."""
    settings = settings_of_a_run("grow-events", JOB_TYPE, events_partitions=partitions)
    size = EventsGrowSize(finished=finished, long=long, load_per_s=load, old=partitions,
                          new=grow_to)  # fmt: skip
    tally = EventsGrowRun(settings, folder, size).run()
    return {"finished_before": finished, "long_runs": long, "load_per_s": load,
            "partitions": [partitions, grow_to], "status_processors": [1, 2],
            "workdir": str(folder), "ok": tally.ok, **tally.summary()}  # fmt: skip
