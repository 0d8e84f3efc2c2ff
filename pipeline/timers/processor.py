"""``jobstream timers``: the timer processor on the processor runtime.

One consumer in the timers group reads jobs.intake and jobs.retry. Partition p of both
(co-partitioned; the range assignor hands them out together) owns one RocksDB store and
partition p of the changelog. Each loop iteration is one Kafka transaction
(pipeline/runtime/runner.py): the records consumed, the firings due on the wall clock, the
changelog, the executions and the input offsets commit together, and the stores are
written only after the commit. With a fire lead (``JOBSTREAM_FIRE_LEAD``) jobs fire that
long before they are due, and a transaction spans the iterations of up to half of it
(:func:`timer_runner`). A record that is not a valid command goes to
jobs.intake.dlq with the reason; the processor goes on.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import ClassVar

from jobstream._pipeline import clock, metrics
from jobstream._pipeline.concurrency import ConcurrencyLimits
from jobstream._pipeline.config import Settings
from jobstream._pipeline.errors import DeserializationError, ValidationError
from jobstream._pipeline.kafka import clients
from jobstream._pipeline.kafka.headers import Headers
from jobstream._pipeline.limits.topic import LimitsFollower
from jobstream._pipeline.model.records import ExecutionRequested
from jobstream._pipeline.model.time_keys import SCHEDULE_LOWER_BOUND
from jobstream._pipeline.runtime import Output, Processor, Record, RunnerOptions
from jobstream._pipeline.runtime.counters import Counters
from jobstream._pipeline.runtime.runner import Runner
from jobstream._pipeline.serde import make_serde
from jobstream._pipeline.state.batch import PartitionBatch
from jobstream._pipeline.tenancy import owner_intake_pattern, owner_of_topic, owner_principal
from jobstream._pipeline.timers.door import PRINCIPAL_HEADER, OwnerDoor
from jobstream._pipeline.timers.handover import Handover
from jobstream._pipeline.timers.intake import checked
from jobstream._pipeline.timers.logic import TimerLogic, TimerPolicy
from jobstream._pipeline.timers.state import TimerState
from jobstream._pipeline.topics import Topics

log = logging.getLogger(__name__)

TIMER_OPTIONS = RunnerOptions(poll_ms=20, commit_interval_ms=0, punctuate_limit=5000)
"""A 20 ms wall-clock ticker (the longest a due job waits for the next scan), one
transaction per iteration, and at most 5,000 firings per transaction (with a fire lead,
:func:`timer_options` changes the last two)."""
MAX_COMMIT_INTERVAL_MS = 250
"""The longest a timers' transaction waits to carry more, with a fire lead: intake's
SCHEDULED events and the changelog wait with it."""
LEAD_FIRINGS_MOST = 1000
"""The most firings one transaction carries, with a fire lead: a burst fired ahead reaches
its workers a piece at a time, the first soon after the lead begins, so they fetch and
claim it before its instant (docs/benchmarks.md, "Firing and claiming ahead")."""


METADATA_REFRESH_MS = 1_000
"""How soon the timers see jobs.intake grown, or an owner's intake topic made, while they
run (their consumer's metadata refresh; librdkafka's default is 5 minutes)."""


class TimerProcessor(Processor[TimerState]):
    name = "timers"
    state_layout = 2
    """2: an owner schedule beside the one by due instant (fair firing)."""
    consumer_tuning: ClassVar[clients.KafkaConfig] = {
        "partition.assignment.strategy": "range",
        **clients.PROMPT_FETCH,
        # A grow of jobs.intake is noticed (and the group rebalanced) within a second, a
        # new owner's intake topic read as soon (docs/kafka-security.md).
        "topic.metadata.refresh.interval.ms": METADATA_REFRESH_MS,
    }
    producer_tuning: ClassVar[clients.KafkaConfig] = clients.GROWN_PARTITIONS_SEEN
    """Executions reach a grown execution topic's new partitions within seconds."""

    def __init__(self, settings: Settings, policy: TimerPolicy | None = None) -> None:
        self.topics = Topics(settings)
        self.inputs = (self.topics.intake, self.topics.retry)
        self.input_patterns = (owner_intake_pattern(settings.topic_prefix),)
        self.door = OwnerDoor(self.topics.intake)
        self.changelog = self.topics.timers_changelog
        self.settings = settings
        self.logic = TimerLogic(
            self.topics,
            policy
            or TimerPolicy(
                owner_weights=settings.owner_weights, concurrency=ConcurrencyLimits.of(settings),
                lead_ms=settings.fire_lead, lead_most_ms=settings.fire_lead_most,
                markers_trusted_before_ms=settings.markers_trusted_before,
                markers_trusted_from_ms=markers_trusted_from(settings),
            ),
        )
        self.limits = LimitsFollower(settings, self.logic.throttle.board)
        _, self.deserialize = make_serde(settings.schema_registry_url)
        self.counts = Counters("fired", "dead_lettered", "throttled", "max_lateness_ms")
        self.owned: set[int] = set()
        self.floors: dict[int, bytes] = {}
        """Each owned partition's due-scan floor as of its last commit (TimerState.floor)."""
        self.handover = Handover(self.topics.retry, settings.timer_partitions)
        """This process's part in a grow of jobs.intake (pipeline/timers/handover.py)."""

    @property
    def partitions(self) -> int:
        """jobs.intake's partition count: the live one once the runner has read it."""
        return self.handover.count(self.topics.intake) or self.settings.timer_partitions

    def inputs_counted(self, counts: Mapping[str, int]) -> None:
        self.handover.counts = dict(counts)
        self.logic.collapses.partitions = self.partitions
        self.logic.throttle.set_share(len(self.owned), self.partitions)

    def held_inputs(self) -> set[tuple[str, int]]:
        """The intake of each partition that waits for records handed over to it."""
        return {(self.topics.intake, p) for p in self.owned if self.handover.waiting(p)}

    def start(self) -> None:
        self.limits.start()

    def close(self) -> None:
        self.limits.stop()

    def open(self, tx: PartitionBatch | None, partition: int) -> TimerState:
        assert tx is not None
        if partition not in self.owned:
            self.owned.add(partition)
            # Restored or not, its schedule is read from the start.
            self.floors[partition] = SCHEDULE_LOWER_BOUND
            self.logic.throttle.set_share(len(self.owned), self.partitions)
            state = TimerState(tx, self.floors[partition], partition)
            self.handover.layouts[partition] = self.handover.layout_of(state)
            return state
        return TimerState(tx, self.floors[partition], partition)

    def admits(self, record: Record) -> bool:
        """While a partition waits for records handed over to it, a submission that can
        meet none of them is taken in: a job of its own, new (no idempotency key), in no
        workflow and with no debounce or singleton key."""
        try:
            event = self.deserialize(record.value())
        except DeserializationError:
            return False
        return self.handover.stands_alone(event.data)

    def revoked(self, partition: int) -> None:
        self.owned.discard(partition)
        self.floors.pop(partition, None)
        self.logic.leads.forget(partition)
        self.handover.layouts.pop(partition, None)
        self.handover.cursors.pop(partition, None)
        self.logic.throttle.set_share(len(self.owned), self.partitions)

    def topics_refused(self, refused: Mapping[str, str]) -> None:
        """A job routed to a refused execution topic is dead-lettered at firing, with the
        reason: the job type its topic collides with, or the cluster's bound on execution
        topics (JOBSTREAM_MAX_EXECUTION_TOPICS)."""
        for name, why in refused.items():
            job_type = self.topics.job_type_of(name)
            if job_type is None:  # not a job type's topic: nothing to route elsewhere
                return super().topics_refused({name: why})
            self.logic.refused_topics[name] = refusal_reason(self.topics, job_type, name, why)

    def restore(self, tx: PartitionBatch, key: bytes, value: bytes | None,
                headers: Headers = None) -> None:  # fmt: skip
        TimerState(tx).restore(key, value)  # the timers' changelog carries no headers

    def process(self, state: TimerState, record: Record, now_ms: int) -> Sequence[Output]:
        owner = owner_of_topic(self.settings.topic_prefix, record.topic())
        if owner is None:  # a door's records pass the door, never a grow's handover
            if self.handover.receive(state, record):
                return ()
            forwarded = self.handover.stray(state, record)
            if forwarded:
                return forwarded
        try:
            event = self.deserialize(record.value())
            if owner is not None:  # an owner's door: pass it on, or refuse it
                return [self.door.passed(owner, event, record, now_ms)]
            return self.logic.process(state, checked(event, now_ms), now_ms)
        except (DeserializationError, ValidationError) as exc:
            return [self._dead_letter(record, str(exc), owner)]

    def punctuate(self, state: TimerState, now_ms: int, limit: int) -> Sequence[Output]:
        emits: list[Output] = []
        # Until the rate limits are read, nothing fires: they may hold some back.
        if self.logic.throttle.board.ready.is_set():
            emits = self.logic.fire_due(state, now_ms, limit)
            if not state.changed and state.partition in self.floors:
                self.floors[state.partition] = state.floor  # read only: holds once dropped
        # What is due fires here first; a grow's handover takes what waits.
        return emits + self.handover.lay_out(state, self.handover.count(self.topics.intake),
                                             now_ms)  # fmt: skip

    def committed(self, state: TimerState, outputs: Sequence[Output]) -> None:
        if state.partition in self.floors:  # an aborted transaction's floor is not kept
            self.floors[state.partition] = state.floor
            self.handover.layouts[state.partition] = self.handover.layout_of(state)
        fired = dead = 0
        for output in outputs:
            if output.topic == self.topics.intake_dlq:
                dead += 1
                continue
            data = getattr(output.value, "data", None)
            if isinstance(data, ExecutionRequested):
                fired += 1
                lateness = data.fired_at_ms - data.scheduled_at_ms
                self.counts.max_lateness_ms = max(self.counts.max_lateness_ms, lateness)
        self.counts.fired += fired
        self.counts.dead_lettered += dead
        self.counts.throttled += len(state.held)
        metrics.TIMER_DEAD_LETTERED.inc(dead)  # firings: the runtime counts their FIRED
        for job_type, count in Counter(state.held).items():
            metrics.THROTTLED.labels(job_type).inc(count)

    def counters(self) -> Mapping[str, object]:
        handover = self.handover
        return {**self.counts.snapshot(), "duplicates": self.logic.duplicates,
                "passed_on": self.door.passed_on, "handed_over": handover.moved,
                "taken_over": handover.received, "forwarded": handover.forwarded}  # fmt: skip

    def _dead_letter(self, record: Record, reason: str, owner: str | None = None) -> Output:
        """``record`` to jobs.intake.dlq with the reason and where it was read; read on an
        owner's intake topic, the principal that topic admits too."""
        source = f"{record.topic()}/{record.partition()}/{record.offset()}"
        headers = [("jobstream.error", reason.encode()), ("jobstream.source", source.encode())]
        if owner is not None:
            headers.append((PRINCIPAL_HEADER, f"User:{owner_principal(owner)}".encode()))
        log.warning("intake record dead-lettered", extra={"reason": reason,
                    "topic": record.topic(), "offset": record.offset(),
                    "principal": f"User:{owner_principal(owner)}" if owner else None})  # fmt: skip
        return Output(self.topics.intake_dlq, record.key(), record.value() or b"",
                      headers=headers)  # fmt: skip


def refusal_reason(topics: Topics, job_type: str, name: str, why: str) -> str:
    """What a refused job's dead letter says: its type, its topic, why (the broker's
    refusal, or the bound), and the type it collides with when the reason names one."""
    others = [other for word in why.replace(",", " ").split()
              if (other := topics.job_type_of(word)) is not None]  # fmt: skip
    names = ", ".join(f"'{other}'" for other in others)
    clash = f" (job type {names}: Kafka treats '.' and '_' in topic names alike)" if others else ""
    return (
        f"spec.job_type: '{job_type}' cannot be routed: its topic {name} was refused: "
        f"{why}{clash}"
    )


def markers_trusted_from(settings: Settings) -> int | None:
    """When markers hold again on a standby that took over: the instant given, or this
    process's start, after which the markers it writes are its own."""
    if settings.markers_trusted_before is None:
        return None
    started = clock.now_ms()
    return started if settings.markers_trusted_from is None else settings.markers_trusted_from


def timer_runner(settings: Settings, options: RunnerOptions = TIMER_OPTIONS,
                 policy: TimerPolicy | None = None) -> Runner[TimerState]:  # fmt: skip
    return Runner(TimerProcessor(settings, policy), settings, timer_options(settings, options))


def timer_options(settings: Settings, options: RunnerOptions) -> RunnerOptions:
    """With a fire lead, each transaction waits up to half of it (at most
    :data:`MAX_COMMIT_INTERVAL_MS`) to carry more: a job fired ahead still reaches its
    workers half a lead early, and one due sooner (or a cancel) commits at once. It
    carries at most :data:`LEAD_FIRINGS_MOST` firings (each an execution and a FIRED),
    and commits once it holds them."""
    if not settings.fire_lead or options.commit_interval_ms:
        return options
    firings = min(options.punctuate_limit, LEAD_FIRINGS_MOST)
    return options.evolve(commit_interval_ms=min(settings.fire_lead // 2, MAX_COMMIT_INTERVAL_MS),
                          punctuate_limit=firings,
                          commit_max_records=min(options.commit_max_records, 2 * firings))
