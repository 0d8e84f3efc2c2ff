"""The restore benchmark's two halves: a changelog partition filled with timer entries,
and a full restore of it into an empty store, timed."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import msgspec
from rich.progress import Progress

from jobstream._ops.bench.harness import JOB_TYPE
from jobstream._ops.bench.measure import disk_mb
from jobstream._ops.bench.submitter import OWNER
from jobstream._pipeline.clock import now_ms
from jobstream._pipeline.config import Settings
from jobstream._pipeline.kafka import clients
from jobstream._pipeline.model.job import JobRequest
from jobstream._pipeline.model.records import JobSubmitted
from jobstream._pipeline.scheduling import new_job_id
from jobstream._pipeline.state.recovery import restore
from jobstream._pipeline.state.store import PartitionStore
from jobstream._pipeline.timers.entry import JobEntry
from jobstream._pipeline.timers.state import TimerState
from jobstream._pipeline.topics import Topics

DAY_MS = 24 * 3600 * 1000
TRANSACTION_RECORDS = 50_000


def fill_changelog(settings: Settings, count: int, progress: Progress) -> float:
    """Write ``count`` job entries to changelog partition 0, as the timer would write them.

    Transactional, like the timer's own writes, so the partition holds commit markers too.
    The entries fall due tomorrow: a timer started on them fires nothing. Returns seconds.
    """
    topic = Topics(settings).timers_changelog
    producer = clients.producer(settings, transactional_id=f"{settings.topic_prefix}bench.fill")
    producer.init_transactions(60)
    start = now_ms()
    template = JobRequest(job_type=JOB_TYPE, owner=OWNER).to_event(start).data
    task = progress.add_task("fill changelog partition 0", total=count, info="")
    started = time.perf_counter()
    producer.begin_transaction()
    for i in range(count):
        job_id = new_job_id(start)
        due = start + DAY_MS + i
        job = {**template, "job_id": job_id, "spec": {**template["spec"], "run_at_ms": due}}
        entry = JobEntry(timer_id=job_id, job=msgspec.convert(job, JobSubmitted), due_ms=due)
        value = entry.encode()
        while True:
            try:
                producer.produce(topic, value, job_id.encode(), partition=0)
                break
            except BufferError:
                producer.poll(0.05)
        if (i + 1) % TRANSACTION_RECORDS == 0 or i + 1 == count:
            producer.commit_transaction(60)
            progress.update(task, completed=i + 1)
            if i + 1 < count:
                producer.begin_transaction()
    return time.perf_counter() - started


def restore_in_process(settings: Settings, path: Path) -> dict[str, Any]:
    """Time jobstream._pipeline.state.recovery.restore of partition 0 into an empty store at
    ``path``."""
    store = PartitionStore(path / "0")
    consumer = clients.consumer(settings, f"{settings.topic_prefix}bench.restore")
    try:
        started = time.perf_counter()
        applied = restore(store, consumer, Topics(settings).timers_changelog, 0,
                          lambda tx, key, value, _: TimerState(tx).restore(key, value))  # fmt: skip
        seconds = time.perf_counter() - started
    finally:
        consumer.close()
        store.close()
    return {"applied": applied, "seconds": seconds, "disk_mb": disk_mb(path)}
