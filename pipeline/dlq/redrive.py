"""Redrive dead letters: put jobs back through jobs.retry, at a capped rate.

A redriven job is the same job: its id, workflow, idempotency key and spec are kept, and
so is its history (every attempt's error travels on in ``errors``) and its latest
checkpoint (``resume_from``). It runs as attempt
``attempts + 1`` at once, through the timers like any retry, so the execution ids of a
redrive never collide with those of earlier attempts. Its attempts stay spent: should the
redriven attempt fail, the router dead-letters the job again rather than starting over
(a redrive is an operator's single, deliberate try after a fix).

Within one invocation a job is redriven at most once, from its latest dead letter (which
holds the whole history), and no record twice: the records are read to the end offsets
taken before the first redrive, so jobs that fail again meanwhile are not picked up.
The producer's transactional id is fixed per topic prefix, so a second redrive started
at the same time fences the first rather than doubling the jobs of both.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from confluent_kafka import KafkaException, Producer

from jobstream._pipeline.clock import now_ms
from jobstream._pipeline.config import Settings
from jobstream._pipeline.dlq.reader import DlqRecord
from jobstream._pipeline.errors import JobstreamError
from jobstream._pipeline.kafka import clients
from jobstream._pipeline.model.lifecycle import LifecycleKind
from jobstream._pipeline.model.records import Event, RetryScheduled, lifecycle
from jobstream._pipeline.partitioning import partition_key
from jobstream._pipeline.runtime import Output
from jobstream._pipeline.serde import make_serde
from jobstream._pipeline.topics import Topics

log = logging.getLogger(__name__)

DEFAULT_RATE = 100.0
"""Jobs per second: a redrive of a large DLQ must not flood the workers it was failing on."""
REDRIVEN = "redriven"


class TokenBucket:
    """At most ``rate`` acquisitions per second on average, and ``burst`` at once.

    With ``burst=1`` acquisitions are spaced by ``1/rate``: n of them take at least
    ``(n - 1) / rate`` seconds.
    """

    def __init__(self, rate: float, *, burst: int = 1,
                 clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep) -> None:  # fmt: skip
        if not rate > 0:
            raise ValueError(f"rate must be positive, got {rate}")
        if burst < 1:
            raise ValueError(f"burst must be at least 1, got {burst}")
        self.rate = rate
        self.burst = burst
        self._clock = clock
        self._sleep = sleep
        self._tokens = float(burst)
        self._updated = clock()

    def acquire(self) -> None:
        """Take one token, sleeping until it has accrued when the bucket is empty."""
        now = self._clock()
        self._tokens = min(self.burst, self._tokens + (now - self._updated) * self.rate)
        self._updated = now
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return
        # Sleep once for the missing fraction and take the token it accrues; re-checking
        # the clock instead could spin on rounding (a fraction below the clock's resolution).
        wait = (1.0 - self._tokens) / self.rate
        self._sleep(wait)
        self._tokens = 0.0
        self._updated = now + wait


def select(records: Iterable[DlqRecord], limit: int | None = None) -> list[DlqRecord]:
    """The latest dead letter of each job, oldest first, at most ``limit`` of them."""
    latest: dict[str, DlqRecord] = {}
    for record in records:
        held = latest.get(record.job_id)
        if held is None or (record.dead_lettered_at_ms, record.offset) >= (
            held.dead_lettered_at_ms, held.offset
        ):  # fmt: skip
            latest[record.job_id] = record
    chosen = sorted(latest.values(), key=lambda r: (r.dead_lettered_at_ms, r.coordinates))
    return chosen if limit is None else chosen[:limit]


def redrive_outputs(topics: Topics, record: DlqRecord, now_ms: int, *,
                    requested_by: str | None = None,
                    reason: str | None = None) -> list[Output]:  # fmt: skip
    """The RetryScheduled and the RETRY_SCHEDULED step that put ``record``'s job back; the
    step names who asked for the redrive and why, for the job's history."""
    dead = record.data
    attempt = dead.attempts + 1
    key = partition_key(dead.job_id, dead.workflow_id)
    retry = RetryScheduled(
        job_id=dead.job_id, workflow_id=dead.workflow_id, attempt=attempt, epoch=0,
        retry_at_ms=now_ms, spec=dead.spec, errors=dead.errors,
        idempotency_key=dead.idempotency_key, resume_from=dead.resume_from,
    )  # fmt: skip
    step = lifecycle(
        LifecycleKind.RETRY_SCHEDULED, dead, at_ms=now_ms, attempt=attempt,
        scheduled_at_ms=now_ms, detail=reason or REDRIVEN, requested_by=requested_by,
    )  # fmt: skip
    return [Output(topics.retry, key, Event.of(retry)), Output(topics.events, key, Event.of(step))]


@dataclass
class RedriveReport:
    redriven: list[DlqRecord] = field(default_factory=list)
    """Redriven (or, in a dry run, that would be), in order."""
    dry_run: bool = False
    elapsed_s: float = 0.0


class Redriver:
    """Produces redrives in transactions, each pair of records committed together."""

    def __init__(self, settings: Settings, *, rate: float = DEFAULT_RATE,
                 commit_interval_s: float = 0.2) -> None:  # fmt: skip
        self.settings = settings
        self.topics = Topics(settings)
        self.bucket = TokenBucket(rate)
        self.commit_interval_s = commit_interval_s
        self.serialize, _ = make_serde(settings.schema_registry_url)
        self._producer: Producer | None = None

    def _transactional(self) -> Producer:
        if self._producer is None:
            self._producer = clients.producer(
                self.settings,
                transactional_id=f"{self.settings.topic_prefix}jobstream.dlq.redrive",
            )
            self._producer.init_transactions(60)
        return self._producer

    def redrive(self, records: Iterable[DlqRecord], *, dry_run: bool = False,
                requested_by: str | None = None, reason: str | None = None) -> RedriveReport:
        """Redrive each record once, at most ``rate`` per second; see :func:`select`. Each
        job's history names who asked (``requested_by``) and why.

        Raises JobstreamError naming how many jobs were redriven when the broker fails
        part way: those are committed, the ones of the open transaction are not.
        """
        report = RedriveReport(dry_run=dry_run)
        started = time.monotonic()
        fresh = _once(records)
        if dry_run:
            report.redriven.extend(fresh)
        else:
            self._produce_all(fresh, report, {"requested_by": requested_by, "reason": reason})
        report.elapsed_s = time.monotonic() - started
        log.info("dead letters redriven", extra={
            "count": len(report.redriven), "dry_run": dry_run, "elapsed_s": report.elapsed_s,
        })  # fmt: skip
        return report

    def _produce_all(self, records: Iterable[DlqRecord], report: RedriveReport,
                     asked: dict[str, str | None]) -> None:  # fmt: skip
        producer = self._transactional()
        pending: list[DlqRecord] = []
        opened = 0.0
        try:
            for record in records:
                self.bucket.acquire()
                if not pending:
                    producer.begin_transaction()
                    opened = time.monotonic()
                now = now_ms()
                for output in redrive_outputs(self.topics, record, now, **asked):
                    value = output.value
                    data = self.serialize(value) if isinstance(value, Event) else bytes(value)
                    producer.produce(output.topic, data, output.key)
                pending.append(record)
                if time.monotonic() - opened >= self.commit_interval_s:
                    producer.commit_transaction(30)
                    report.redriven.extend(pending)
                    pending.clear()
            if pending:
                producer.commit_transaction(30)
                report.redriven.extend(pending)
        except KafkaException as exc:
            if pending:
                with contextlib.suppress(KafkaException):  # fenced: nothing left to abort
                    producer.abort_transaction(30)
            raise JobstreamError(
                f"redrive stopped after {len(report.redriven)} jobs: {exc}"
            ) from exc

    def close(self) -> None:
        if self._producer is not None:
            self._producer.flush(30)


def _once(records: Iterable[DlqRecord]) -> Iterator[DlqRecord]:
    """Each record at most once, however often the input repeats it."""
    seen: set[tuple[str, int, int]] = set()
    for record in records:
        if record.coordinates not in seen:
            seen.add(record.coordinates)
            yield record
