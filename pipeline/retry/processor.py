"""``jobstream retry-router``: the retry router on the processor runtime.

A stateless processor on jobs.events: one Kafka transaction per batch holds the routed
records and the input offsets, so a crash neither loses a failure nor retries it twice.
Any instance can take any partition of jobs.events. Most of jobs.events is not failures:
those records are passed over on their kind byte (pipeline/serde/peek.py) without being
decoded.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import ClassVar

from jobstream._pipeline.config import Settings
from jobstream._pipeline.errors import DeserializationError
from jobstream._pipeline.growth.strays import is_forwarded
from jobstream._pipeline.kafka import clients
from jobstream._pipeline.model.retry import RetryDefaults
from jobstream._pipeline.retry.router import FAILURE_KINDS, RetryRouter
from jobstream._pipeline.runtime import Output, Processor, Record, RunnerOptions
from jobstream._pipeline.runtime.runner import Runner
from jobstream._pipeline.serde import make_serde
from jobstream._pipeline.serde.peek import LIFECYCLE_KINDS, lifecycle_kind
from jobstream._pipeline.topics import Topics

log = logging.getLogger(__name__)

PASSED_OVER = frozenset(LIFECYCLE_KINDS) - FAILURE_KINDS
"""Kinds the router has nothing to do with: skipped without decoding (most of jobs.events)."""

ROUTER_OPTIONS = RunnerOptions(poll_ms=100, commit_interval_ms=1000)
"""A failure routed commits at the end of its batch (its outputs are urgent); the offsets
of the records passed over, most of jobs.events, at most once a second: a transaction
holding offsets only cost the broker three requests and a marker, ten times a second
(docs/benchmarks.md). A 100 ms poll bounds how soon a stop request is noticed."""


class RetryProcessor(Processor[None]):
    name = "retry"
    consumer_tuning: ClassVar[clients.KafkaConfig] = {**clients.BATCHED_FETCH,
                                                      **clients.GROWN_PARTITIONS_SEEN}
    """Batched fetches; a grown jobs.events' new partitions read within seconds."""

    def __init__(self, settings: Settings, defaults: RetryDefaults | None = None) -> None:
        topics = Topics(settings)
        self.inputs = (topics.events,)
        self.router = RetryRouter(topics, defaults)
        _, self.deserialize = make_serde(settings.schema_registry_url)
        self.undecodable = 0

    def process(self, state: None, record: Record, now_ms: int) -> Iterable[Output]:
        value = record.value()
        if lifecycle_kind(value) in PASSED_OVER:
            return ()
        if is_forwarded(record):  # its original, on the partition it was written to, was routed
            return ()
        try:
            event = self.deserialize(value)
        except DeserializationError as exc:
            # jobs.events is written by jobstream's own components; a record none of the
            # schemas reads is skipped and counted rather than stopping every retry.
            self.undecodable += 1
            where = {"partition": record.partition(), "offset": record.offset()}
            log.warning("jobs.events record the router cannot read skipped",
                        extra={"reason": str(exc), **where})  # fmt: skip
            return ()
        unroutable = self.router.stats.unroutable
        outputs = self.router.route(event, now_ms)
        if self.router.stats.unroutable != unroutable:
            log.warning("failure the router cannot route skipped", extra={
                "job_id": event.data.job_id, "offset": record.offset()})  # fmt: skip
        return outputs

    def counters(self) -> Mapping[str, object]:
        return {"undecodable": self.undecodable, **self.router.stats.snapshot()}


def router_runner(settings: Settings, options: RunnerOptions = ROUTER_OPTIONS,
                  defaults: RetryDefaults | None = None) -> Runner[None]:  # fmt: skip
    return Runner(RetryProcessor(settings, defaults), settings, options)
