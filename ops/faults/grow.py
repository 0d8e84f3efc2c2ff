"""A grow of the timers' partitions under load, and what the jobs saw of it.

One timer process holds the timers' partitions with pending one-off jobs and recurring
ones (cron with a jitter, so their instants spread over the minute and some fall soon
after the grow); a steady load keeps coming, from a client that still has the old count
and, after the grow, from one that has the new. The timers' topics grow
(``jobstream topics grow``'s function) and a second timer process joins. The tally reads
the execution topics and the timers' changelog (:mod:`jobstream._ops.faults.grow_tally`).

The broker test (tests/test_grow_partitions.py) runs it at CI size;
``jobstream faults grow`` at full size (docs/scaling.md gives the figures).
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any

from confluent_kafka import Consumer, TopicPartition

from jobstream._ops.faults.groups import wait_assigned
from jobstream._ops.faults.grow_tally import GrowTally, Planned, tally_grow
from jobstream._ops.stack import process_env
from jobstream._pipeline.clock import now_ms
from jobstream._pipeline.config import Settings
from jobstream._pipeline.errors import JobstreamError
from jobstream._pipeline.jobs.client import JobClient
from jobstream._pipeline.kafka.scan import partitions_of, scan_consumer
from jobstream._pipeline.model.idempotency import idempotent_job_id
from jobstream._pipeline.model.job import JobRequest
from jobstream._pipeline.runtime.options import processor_group
from jobstream._pipeline.scheduling import CronSpec, next_due_ms
from jobstream._pipeline.timers.grow import grow_timer_topics
from jobstream._pipeline.topics import Topics

log = logging.getLogger(__name__)

JOB_TYPE = "data.process"
OWNER = "grow"
CRON = CronSpec(expression="* * * * *", timezone="UTC", jitter_ms=59_000)
"""Every minute, each job at its own instant in it (the jitter its id gives it)."""
SUBMIT_BATCH = 5_000


@dataclass(frozen=True)
class GrowSize:
    pending: int
    """One-off jobs pending in the stores when the topics grow."""
    recurring: int
    """Recurring jobs pending then, each due within the run."""
    load_per_s: int
    """Jobs submitted each second throughout, each due 1.5 s later."""

    @property
    def span_s(self) -> float:
        """How long after the grow the pending jobs' instants spread over."""
        return max(20.0, self.pending / 2500)

    @property
    def setup_s(self) -> float:
        """How long before the grow the pending jobs are submitted (the timers store them)."""
        return 8.0 + self.pending / 4000


class GrowRun:
    """The run's processes and clients; a context manager that stops them."""

    def __init__(self, settings: Settings, folder: Path, size: GrowSize) -> None:
        self.settings, self.folder, self.size = settings, folder, size
        self.topics = Topics(settings)
        self.group = processor_group(settings.topic_prefix, "timers")
        self.processes: list[subprocess.Popen[bytes]] = []
        self.plan = Planned(one_off=set(), recurring={}, grow_at_ms=0, old=0, new=0)
        self._stop = threading.Event()
        self._tally: GrowTally | None = None

    def __enter__(self) -> GrowRun:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:  # fmt: skip
        self._stop.set()
        for process in self.processes:
            process.terminate()
        for process in self.processes:
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(10)

    @property
    def tally(self) -> GrowTally:
        assert self._tally is not None, "run() first"
        return self._tally

    def run(self, grow_to: int, timeout_s: float = 180.0) -> GrowTally:
        reader = scan_consumer(self.settings)
        try:
            old = len(partitions_of(reader, self.topics.intake))
        finally:
            reader.close()
        self._start_timers("a")
        wait_assigned(self.settings, {self.group: 1}, timeout_s=60)
        start = now_ms()
        grow_at = start + int(self.size.setup_s * 1000)
        self.plan = Planned(one_off=set(), recurring={}, grow_at_ms=grow_at, old=old, new=grow_to)
        stale = JobClient(self.settings)  # its metadata keeps the old count after the grow
        load = threading.Thread(target=self._load, args=(stale, grow_at), daemon=True)
        load.start()
        self._submit_pending(stale, grow_at)
        self._wait_caught_up(grow_at)
        time.sleep(max(0.0, (grow_at - now_ms()) / 1000))
        started = now_ms()
        grow_timer_topics(self.settings, grow_to)
        log.info("grown", extra={"took_ms": now_ms() - started})
        self._start_timers("b")
        fresh = JobClient(self.settings)
        self._load(fresh, grow_at, until_ms=grow_at + int(self.size.span_s * 500))
        load.join(60)
        stale.close()
        fresh.close()
        last_due = grow_at + int((2 + self.size.span_s) * 1000)
        self._tally = tally_grow(self.settings, self.plan, until_ms=last_due + 3000,
                                 timeout_s=timeout_s, cron=CRON)  # fmt: skip
        return self._tally

    # -- the load ----------------------------------------------------------------------------

    def _submit_pending(self, client: JobClient, grow_at: int) -> None:
        """The one-off jobs, due over the span after the grow, and the recurring ones whose
        first instant falls in it."""
        first, span = grow_at + 2000, int(self.size.span_s * 1000)
        n = self.size.pending
        requests = [JobRequest(job_type=JOB_TYPE, owner=OWNER, params={"i": i},
                               run_at=_at(first + i * span // max(1, n)))
                    for i in range(n)]  # fmt: skip
        for at in range(0, n, SUBMIT_BATCH):
            ids = client.submit_many(requests[at : at + SUBMIT_BATCH])
            self.plan.one_off.update(ids)
            self.plan.pending.update(ids)
        submitted, i = now_ms(), 0
        chosen: list[JobRequest] = []
        while len(chosen) < self.size.recurring:
            key = f"{self.settings.topic_prefix}cron-{i}"
            i += 1
            job_id = idempotent_job_id(OWNER, key)
            due = next_due_ms(CRON, submitted, job_id=job_id)
            if due is None or not first + 2000 <= due <= first + span - 2000:
                continue
            chosen.append(JobRequest(job_type=JOB_TYPE, owner=OWNER, cron=CRON,
                                     idempotency_key=key))  # fmt: skip
            self.plan.recurring[job_id] = due
        client.submit_many(chosen)

    def _load(self, client: JobClient, grow_at: int, until_ms: int | None = None) -> None:
        """``load_per_s`` jobs a second, each due 1.5 s on, until ``until_ms`` (the stale
        client's thread: until the grow and as long again after it)."""
        until = until_ms or grow_at + int(self.size.span_s * 1000)
        per_tick = max(1, self.size.load_per_s // 10)
        while not self._stop.is_set() and now_ms() < until:
            tick = time.monotonic()
            due = _at(now_ms() + 1500)
            ids = client.submit_many(JobRequest(job_type=JOB_TYPE, owner=OWNER, run_at=due)
                                     for _ in range(per_tick))  # fmt: skip
            self.plan.one_off.update(ids)
            self._stop.wait(max(0.0, 0.1 - (time.monotonic() - tick)))

    def _wait_caught_up(self, grow_at: int) -> None:
        """Until the timers have read jobs.intake to its end (the jobs are in the stores)."""
        consumer = Consumer({**self.settings.kafka_config, "group.id": self.group})
        try:
            partitions = [TopicPartition(self.topics.intake, p) for p in range(self.plan.old)]
            while now_ms() < grow_at:
                committed = consumer.committed(partitions, timeout=10)
                ends = [consumer.get_watermark_offsets(tp, timeout=10)[1] for tp in partitions]
                behind = sum(max(0, end - max(tp.offset, 0))
                             for tp, end in zip(committed, ends, strict=True))  # fmt: skip
                if behind < self.size.load_per_s:  # only the steady load's last second
                    return
                time.sleep(0.2)
            log.warning("the timers had not stored every pending job when the grow began")
        finally:
            consumer.close()

    def _start_timers(self, instance: str) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        log_path = self.folder / f"timers-{instance}.log"
        with open(log_path, "ab") as out:
            self.processes.append(subprocess.Popen(
                [sys.executable, "-m", "jobstream._pipeline", "timers", "--instance-id", instance,
                 "--state-dir", str(self.folder / f"state-{instance}")],
                env=process_env(self.settings), stdout=out, stderr=subprocess.STDOUT,
            ))  # fmt: skip
        if self.processes[-1].poll() is not None:
            raise JobstreamError(f"timers {instance} exited at once (see {log_path})")


def _at(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, UTC)


def settings_of_a_run(name: str, job_type: str, **update: Any) -> Settings:
    """The configured settings, with ``update``, under a topic prefix of the run's own
    (``<name>-<time>.``) whose topics are made here."""
    from jobstream._pipeline.config import load_settings
    from jobstream._pipeline.kafka.admin import ensure_topics

    base = load_settings()
    settings = base.model_copy(update={
        "topic_prefix": f"{base.topic_prefix}{name}-{int(time.time())}.",
        "job_types": (job_type,), **update,
    })  # fmt: skip
    ensure_topics(settings.kafka_config, Topics(settings).specs(),
                  replication_factor=settings.replication_factor)  # fmt: skip
    return settings


def run_grow(folder: Path, *, pending: int, recurring: int, load: int, partitions: int,
             grow_to: int) -> dict[str, Any]:  # fmt: skip
    """``jobstream faults grow``: a run on the configured broker, under topics of its own."""
    settings = settings_of_a_run("grow", JOB_TYPE, timer_partitions=partitions)
    size = GrowSize(pending=pending, recurring=recurring, load_per_s=load)
    started, load_before = time.monotonic(), os.getloadavg()[0]
    with GrowRun(settings, folder, size) as grow_run:
        tally = grow_run.run(grow_to=grow_to, timeout_s=300 + pending / 500)
    return {"pending": pending, "recurring": recurring, "load_per_s": load,
            "partitions": [partitions, grow_to], "timer_processes": [1, 2],
            "wall_s": round(time.monotonic() - started, 1), "workdir": str(folder),
            "load_average_1m": [round(load_before, 1), round(os.getloadavg()[0], 1)],
            **tally.summary()}  # fmt: skip
