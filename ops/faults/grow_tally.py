"""What a grow of the timers' partitions did to the jobs, read from the topics: every
firing on the execution topics (read_committed), and the timers' changelog for where each
recurring job's next run waits (ops/faults/grow.py runs the grow)."""

from __future__ import annotations

import time
import uuid
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import TopicPartition

from jobstream._pipeline.clock import now_ms
from jobstream._pipeline.config import Settings
from jobstream._pipeline.kafka import clients
from jobstream._pipeline.partitioning import java_partition
from jobstream._pipeline.scheduling import CronSpec, next_due_ms
from jobstream._pipeline.serde import make_serde
from jobstream._pipeline.timers.entry import JobEntry, TimerEntry
from jobstream._pipeline.topics import PRIORITIES, Topics

_, DESERIALIZE = make_serde()


@dataclass
class Planned:
    one_off: set[str]
    """Every one-off job submitted (pending and the steady load)."""
    recurring: dict[str, int]
    """Each recurring job pending at the grow, with its first instant."""
    grow_at_ms: int
    old: int
    new: int
    pending: set[str] = field(default_factory=set)
    """The one-off jobs submitted before the grow (in the old partitions' stores)."""


@dataclass
class GrowTally:
    fired: int
    lost: set[str]
    twice: dict[str, int]
    off_schedule: dict[str, list[int]]
    """Recurring jobs whose runs were not their schedule's instants, one after the other."""
    next_run_missing: dict[str, str]
    """Recurring jobs whose next run is not in their home partition's store, and what is."""
    after_change: int
    """Firings due at or after the grow began."""
    max_late_ms: int
    p99_late_ms: int
    handed_over: int
    """Jobs pending before the grow whose entry reached a partition the grow added."""
    first_late_ms: int = 0
    """How late the first firing due after the change was (the latest of those due at that
    first instant)."""
    latest_firings: list[tuple[str, int, int]] = field(default_factory=list)
    """The ten latest firings after the change: (job id, due instant, ms late)."""

    def summary(self) -> dict[str, Any]:
        return {"fired": self.fired, "lost": len(self.lost), "fired_twice": len(self.twice),
                "recurring_off_schedule": len(self.off_schedule),
                "recurring_next_run_missing": len(self.next_run_missing),
                "fired_after_change": self.after_change,
                "first_late_ms": self.first_late_ms, "max_late_ms": self.max_late_ms,
                "p99_late_ms": self.p99_late_ms, "handed_over": self.handed_over}  # fmt: skip


def tally_grow(settings: Settings, plan: Planned, *, until_ms: int, timeout_s: float,
               cron: CronSpec) -> GrowTally:  # fmt: skip
    """Read the firings until ``until_ms`` has passed and every planned job fired (or
    ``timeout_s``), then the changelog, and tally."""
    runs = _firings(settings, plan, until_ms, timeout_s)
    fired_ids = Counter(job_id for job_id, _, _ in runs)
    per_run = Counter((job_id, due) for job_id, due, _ in runs)
    expected = plan.one_off | set(plan.recurring)
    after = sorted(((fired - due, job_id, due) for job_id, due, fired in runs
                    if due >= plan.grow_at_ms), reverse=True)  # fmt: skip
    late = sorted(ms for ms, _, _ in after)
    first_due = min((due for _, _, due in after), default=None)
    first_late = max((ms for ms, _, due in after if due == first_due), default=0)
    schedules: dict[str, list[int]] = defaultdict(list)
    fired_at: dict[tuple[str, int], int] = {}
    for job_id, due, fired in runs:
        if job_id in plan.recurring:
            schedules[job_id].append(due)
            fired_at[(job_id, due)] = fired
    off = {}
    for job_id, first in plan.recurring.items():
        dues = sorted(schedules.get(job_id, []))
        if dues != _occurrences(cron, job_id, first, dues, fired_at):
            off[job_id] = dues
    latest = _changelog(settings, plan.new)
    missing = {}
    for job_id, first in plan.recurring.items():
        # The changelog is read after the firings: a run may have fired in between, so the
        # entry may wait for any instant of the schedule after the last run read.
        dues = sorted(schedules.get(job_id, []))
        upcoming = _occurrences(cron, job_id, first, [*dues, *[0] * 3], fired_at)[len(dues) :]
        home = java_partition(job_id.encode(), plan.new)
        live = {p for p, raw in latest.get(job_id, {}).items() if raw is not None}
        raw = latest.get(job_id, {}).get(home)
        entry = None if raw is None else TimerEntry.decode(raw)
        if live != {home} or not isinstance(entry, JobEntry) or entry.due_ms not in upcoming:
            missing[job_id] = (f"expected at {upcoming[0]} in partition {home}; live in "
                               f"{live}: {None if entry is None else (entry.kind, entry.due_ms)}")
    moved = {job_id for job_id in plan.pending | set(plan.recurring)
             if any(p >= plan.old for p in latest.get(job_id, {}))}  # fmt: skip
    return GrowTally(
        fired=len(runs), lost=expected - set(fired_ids),
        twice={f"{job_id}@{due}": n for (job_id, due), n in per_run.items() if n > 1},
        off_schedule=off, next_run_missing=missing, after_change=len(late),
        max_late_ms=late[-1] if late else 0,
        p99_late_ms=late[int(len(late) * 0.99)] if late else 0, handed_over=len(moved),
        first_late_ms=first_late,
        latest_firings=[(job_id, due, ms) for ms, job_id, due in after[:10]],
    )  # fmt: skip


def _occurrences(cron: CronSpec, job_id: str, first: int, fired: list[int],
                 fired_at: dict[tuple[str, int], int]) -> list[int]:  # fmt: skip
    """The instants the timers should have fired ``fired`` at, and one more: each the
    schedule's next after the previous one's due instant, or its firing if that was later
    (the timers' rule: an instant passed while a run was late is not run again)."""
    dues = [first]
    while len(dues) < len(fired):
        after = max(dues[-1], fired_at.get((job_id, dues[-1]), 0))
        upcoming = next_due_ms(cron, after, job_id=job_id, runs_so_far=len(dues))
        assert upcoming is not None  # no end to the schedule
        dues.append(upcoming)
    return dues[: len(fired)]


def _firings(settings: Settings, plan: Planned, until_ms: int,
             timeout_s: float) -> list[tuple[str, int, int]]:  # fmt: skip
    """(job id, due instant, fired instant) of every execution, read until ``until_ms``
    has passed and every planned job has fired (at most ``timeout_s``)."""
    topics = Topics(settings)
    consumer = clients.consumer(settings, f"grow-tally-{uuid.uuid4().hex[:8]}")
    names = [topics.execution("data.process", priority) for priority in PRIORITIES]
    metadata = consumer.list_topics(timeout=30).topics
    consumer.assign([TopicPartition(name, p, 0) for name in names
                     for p in range(len(metadata[name].partitions))])  # fmt: skip
    expected = plan.one_off | set(plan.recurring)
    runs: list[tuple[str, int, int]] = []
    seen: set[str] = set()
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline:
            for message in consumer.consume(5000, timeout=0.5):
                if message.error() is None:
                    data = DESERIALIZE(message.value()).data
                    runs.append((data.job_id, data.scheduled_at_ms, data.fired_at_ms))
                    seen.add(data.job_id)
            if now_ms() > until_ms and expected <= seen:
                break
        for _ in range(4):  # a duplicate would come right behind: read on a little
            for message in consumer.consume(5000, timeout=0.5):
                if message.error() is None:
                    data = DESERIALIZE(message.value()).data
                    runs.append((data.job_id, data.scheduled_at_ms, data.fired_at_ms))
    finally:
        consumer.close()
    return runs


def _changelog(settings: Settings, partitions: int) -> dict[str, dict[int, bytes | None]]:
    """Timer id -> partition -> the latest value of the changelog for it there."""
    topic = Topics(settings).timers_changelog
    consumer = clients.consumer(settings, f"grow-tally-{uuid.uuid4().hex[:8]}")
    assigned = [TopicPartition(topic, p, 0) for p in range(partitions)]
    ends = {tp.partition: consumer.get_watermark_offsets(tp, timeout=10)[1] for tp in assigned}
    consumer.assign(assigned)
    latest: dict[str, dict[int, bytes | None]] = defaultdict(dict)
    positions = dict.fromkeys(ends, 0)
    deadline = time.monotonic() + 60
    try:
        while any(positions[p] < end for p, end in ends.items()) and time.monotonic() < deadline:
            for message in consumer.consume(5000, timeout=0.5):
                if message.error() is not None:
                    continue
                p, key = message.partition() or 0, message.key() or b""
                positions[p] = (message.offset() or 0) + 1
                if key[:1].isupper() or key[:1].isdigit():
                    latest[key.decode()][p] = message.value()
            for tp in consumer.position(assigned):  # transaction markers move positions on
                positions[tp.partition] = max(positions[tp.partition], tp.offset)
    finally:
        consumer.close()
    return latest
