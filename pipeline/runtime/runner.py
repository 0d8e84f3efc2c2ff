"""The runner: one processor carried over Kafka, exactly once.

One consumer (static group member ``jobstream.<processor>.<instance id>``) reads the
processor's inputs; one transactional producer, named the same, writes its outputs and
its changelog. Each loop iteration consumes a batch, lets the processor fold it and act on
the wall clock (pipeline/runtime/task.py), and commits the open transaction when the
commit schedule says so (pipeline/runtime/schedule.py), at once when it holds an urgent
output. A commit follows one order
(:meth:`Runner.commit`, over pipeline/kafka/commit.py):

1. a topic seen for the first time is created (one the broker refuses is reported to the
   processor and the batch redone without the transaction begun); every output is
   produced, then each partition's changelog records, whose delivery reports give the
   changelog offsets;
2. the transaction commits with the consumer's positions (flush, send offsets with the
   group metadata, commit): outputs, changelog and input offsets become visible at once;
3. only then are the stores written, each with the changelog offset it reached, and the
   processor told (:meth:`Processor.committed`).

An abort drops the whole open transaction and rewinds the consumer to the committed
offsets; the stores were not touched, so the same input is processed again. A crash
between 2 and 3 leaves a store behind its changelog, which restore catches up.

A Kafka error that no abort mends (a fenced or fatal producer, a fenced consumer, a
transaction in a state it cannot leave, a partition unknown during restore) does not stop
the process: :meth:`Runner.recover` drops the open transaction and the stores, builds
new clients (the new producer fences whatever its predecessor left open), and joins the
group again, so the partitions come back restored. Only when that keeps failing for
``recover_timeout_s`` does the error end the process, for its supervisor to restart it.
A store that cannot be written or restored (a full disk) is mended the same way, after a
wait that doubles while it fails again (up to 30 s); meanwhile /healthz reports commits
failing.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from functools import partial
from typing import Generic, TypedDict, TypeVar

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, TopicPartition

from jobstream._pipeline import metrics
from jobstream._pipeline.clock import now_ms
from jobstream._pipeline.config import Settings
from jobstream._pipeline.errors import (
    AuthorizationError,
    StoreError,
    TopicMismatchError,
    TopicRefusedError,
)
from jobstream._pipeline.kafka import clients
from jobstream._pipeline.kafka.admin import ensure_topics
from jobstream._pipeline.kafka.commit import (
    KAFKA_FAILURES,
    is_fatal,
    kafka_error_of,
    rewind,
    send,
    transact,
)
from jobstream._pipeline.kafka.denied import denied
from jobstream._pipeline.kafka.identity import topic_identity
from jobstream._pipeline.runtime.health import LoopHealth
from jobstream._pipeline.runtime.lag import ConsumerLag
from jobstream._pipeline.runtime.observed import observe_all
from jobstream._pipeline.runtime.options import RunnerOptions, processor_group
from jobstream._pipeline.runtime.processor import Output, Processor
from jobstream._pipeline.runtime.schedule import CommitSchedule
from jobstream._pipeline.runtime.task import Task
from jobstream._pipeline.runtime.transaction import OpenTransaction
from jobstream._pipeline.serde import Event, make_serde
from jobstream._pipeline.state.partitions import PartitionStores
from jobstream._pipeline.topics import Topics

log = logging.getLogger(__name__)

S = TypeVar("S")

STORE_RETRY_FIRST_S = 1.0
STORE_RETRY_MAX_S = 30.0
"""The wait before restoring after a store failure: doubles while it fails again."""


class Runner(Generic[S]):
    def __init__(self, processor: Processor[S], settings: Settings,
                 options: RunnerOptions | None = None) -> None:  # fmt: skip
        self.processor = processor
        self.settings = settings
        self.options = options or RunnerOptions()
        self.topics = Topics(settings)
        self.serialize, _ = make_serde(settings.schema_registry_url)
        self.name = processor.name
        group = processor_group(settings.topic_prefix, processor.name)
        tuning = dict(processor.consumer_tuning)
        if processor.punctuate_when_caught_up:
            tuning["enable.partition.eof"] = True
        self._group, self._tuning = group, tuning
        self.consumer, self.producer = clients.processor_clients(
            settings, group, self.options.instance_id,
            producer_tuning=processor.producer_tuning, **tuning,
        )  # fmt: skip
        self.partitions: PartitionStores | None = None
        if processor.changelog is not None:
            self.partitions = PartitionStores(
                self.options.store_root(group),
                processor.changelog,
                lambda: clients.consumer(settings, f"{group}.restore"),
                processor.restore,
                processor.state_layout,
                identify=partial(topic_identity, settings.kafka_config),
            )
        self.task: Task[S] = Task(
            processor,
            None if self.partitions is None else self.partitions.stores,
            self.options.punctuate_limit,
        )
        self.stats = self.task.stats
        self.schedule = CommitSchedule(
            interval_s=self.options.commit_interval_ms / 1000,
            max_pending=self.options.commit_max_records,
            last_commit=time.monotonic(),
        )
        self.health = LoopHealth(processor.name, self.options.stats_interval_s, self.counters)
        self.health.refresh(ConsumerLag(lambda: self.consumer, group))
        if self.partitions is not None:
            self.health.refresh(self._store_size)
        self._known_topics: set[str] = set()
        self._held: set[tuple[str, int]] = set()
        """Inputs paused because the processor holds them back (:meth:`_hold`)."""
        self._at_end: set[tuple[str, int]] = set()
        """Input partitions read to their end since their last record (their EOF)."""
        self.recoveries = 0
        self._store_retry_s = STORE_RETRY_FIRST_S
        self._unowned_since: float | None = time.monotonic()
        """Since when the runner has held no partition (None: it holds some)."""
        self._failing_since: float | None = None
        """Since when its commits have failed (None: the last one committed)."""
        self._metric_labels = {"component": processor.name}

    # -- lifecycle -----------------------------------------------------------------------

    def start(self) -> None:
        """Check the topics, fence any predecessor's transaction and join the group."""
        found = self.consumer.list_topics(timeout=30).topics
        self._check_visible(set(self.processor.inputs) - set(found))
        self._check_copartitioned({name: len(t.partitions) for name, t in found.items()})
        self._known_topics = set(found)
        self.processor.start()
        self._join()
        metrics.add_health_check(self.name, self.health_problem)
        log.info("%s started", self.name, extra={"instance": self.options.instance_id})

    def _join(self) -> None:
        """Fence any predecessor's transaction and subscribe."""
        try:
            self.producer.init_transactions(self.options.kafka_timeout_s)
        except KafkaException as exc:
            refused = self._refusal(exc.args[0])
            if refused is not None:
                raise refused from exc
            raise
        self.consumer.subscribe([*self.processor.inputs, *self.processor.input_patterns],
                                on_assign=self._on_assign,
                                on_revoke=self._on_revoke, on_lost=self._on_revoke)  # fmt: skip

    def run(self, stop: threading.Event) -> None:
        """Serve until ``stop``; commit what was folded, then close."""
        self.start()
        try:
            while not stop.is_set():
                try:
                    self.step()
                except KAFKA_FAILURES as exc:
                    error = kafka_error_of(exc)
                    if error is None:
                        raise
                    refused = self._refusal(error.args[0])
                    if refused is not None:  # no retry helps until someone grants it
                        raise refused from exc
                    self.recover(error, stop)
                except StoreError as exc:
                    self._store_failed(exc, stop)
                self.health.beat()
            self.commit()
        finally:
            self.health.log_stats()
            self.close()

    def close(self) -> None:
        metrics.remove_health_check(self.name)
        self.processor.close()
        self.consumer.close()
        if self.partitions is not None:
            self.partitions.close()

    def _refusal(self, error: KafkaError | None, *, topic: str | None = None,
                 operation: str = "WRITE") -> AuthorizationError | None:  # fmt: skip
        """``error`` as the refusal it may be, named with this processor's group and
        transactional id; a topic not known is named by the processor's inputs."""
        member = f"{self._group}.{self.options.instance_id}"
        return denied(error, topic=topic or ", ".join(self.processor.inputs),
                      group=self._group, transactional_id=member, operation=operation,
                      principal=self.settings.sasl_username)  # fmt: skip

    def _store_failed(self, error: StoreError, stop: threading.Event) -> None:
        """A store could not be written or restored (a full disk, an I/O error). What the
        last transaction committed is in the changelog: wait, doubling the wait while it
        fails again, then recover, which restores every partition from its checkpoint."""
        self._failing_since = self._failing_since or time.monotonic()
        log.error("%s: %s; restoring from the changelog in %.0f s", self.name, error,
                  self._store_retry_s)  # fmt: skip
        stop.wait(self._store_retry_s)
        self._store_retry_s = min(self._store_retry_s * 2, STORE_RETRY_MAX_S)
        self.recover(error, stop)

    def recover(self, error: Exception, stop: threading.Event) -> None:
        """Start afresh after ``error``: new clients, a new transaction epoch, partitions
        restored again. Raises the last error once ``recover_timeout_s`` has passed."""
        log.warning("%s recovering from: %s", self.name, error,
                    extra={"instance": self.options.instance_id})  # fmt: skip
        self.recoveries += 1
        tx = self.task.take()
        if tx is not None:
            self.task.aborted(tx)
        self._drop_partitions()
        if self.partitions is not None:
            self.partitions.renew_restorer()
        deadline = time.monotonic() + self.options.recover_timeout_s
        delay_s = 0.1
        while not stop.is_set():
            self._close_clients()
            self.consumer, self.producer = clients.processor_clients(
                self.settings, self._group, self.options.instance_id,
                producer_tuning=self.processor.producer_tuning, **self._tuning,
            )  # fmt: skip
            try:
                self._join()
                log.info("%s recovered", self.name, extra={"recoveries": self.recoveries})
                return
            except KafkaException as exc:
                if time.monotonic() + delay_s > deadline:
                    raise
                log.warning("%s not recovered yet: %s", self.name, exc)
                stop.wait(delay_s)
                delay_s = min(delay_s * 2, 5.0)

    def _drop_partitions(self) -> None:
        """Give up every partition, and close every store, those an interrupted
        assignment restored before the task took them included."""
        self.task.revoke(set(self.task.owned))
        if self.partitions is not None:
            self.partitions.revoke(list(self.partitions.stores))
        metrics.PARTITIONS.labels(**self._metric_labels).set(0)
        self._unowned_since = self._unowned_since or time.monotonic()

    def _close_clients(self) -> None:
        try:
            self.consumer.close()
        except (KafkaException, RuntimeError) as exc:  # already closed, or the broker is gone
            log.debug("consumer close: %s", exc)
        self.producer.purge()

    def health_problem(self) -> str | None:
        """What /healthz reports: no partitions, or no commit, for too long."""
        now, grace = time.monotonic(), self.options.unhealthy_after_s
        if self._unowned_since is not None and now - self._unowned_since > grace:
            return f"no partitions for {now - self._unowned_since:.0f} s"
        if self._failing_since is not None and now - self._failing_since > grace:
            return f"commits failing for {now - self._failing_since:.0f} s"
        return None

    def counters(self) -> Mapping[str, object]:
        return {**self.stats.snapshot(), **self.processor.counters(), "recoveries": self.recoveries,
                "partitions": sorted(self.task.owned)}  # fmt: skip

    @property
    def uncommitted(self) -> int:
        """Input records folded into the open transaction."""
        return self.task.uncommitted

    # -- one loop iteration --------------------------------------------------------------

    def step(self) -> None:
        """Consume a batch, process it and act on the clock; commit when it is due."""
        messages = self.consumer.consume(self.options.batch_size,
                                         timeout=self.options.poll_ms / 1000)  # fmt: skip
        records = []
        # A partition's end often comes in the same batch as its last records: it counts
        # once they are processed (processing a record clears it), not before. A store
        # with two inputs is read to its end once both are.
        ended: set[int] = set()
        at_end = self._at_end
        for message in messages:
            error = message.error()
            if error is None:
                records.append(message)
                if at_end:  # an end seen before, and more records came since
                    at_end.discard((message.topic() or "", message.partition() or 0))
            elif error.code() == KafkaError._PARTITION_EOF:
                at_end.add((message.topic() or "", message.partition() or 0))
                ended.add(message.partition() or 0)
            else:
                self._consume_error(message)
        inputs = self.processor.inputs
        ended = {p for p in ended if all((t, p) in at_end for t in inputs)}
        if not self.task.owned:
            return
        now = now_ms()
        self.task.begin()
        records = self._hold(records)
        self.task.process(records, now)
        for p in ended:
            self.task.reached_end(p)
        self.task.punctuate(now)
        tx = self.task.open_transaction
        if tx is None or not tx.pending:
            self.task.release()  # nothing yet: the next iteration reads the stores afresh
            return
        if tx.urgent:
            self.schedule.hurry()
        if self.schedule.due(time.monotonic(), tx.size):
            self.commit()

    def _hold(self, records: list[Message]) -> list[Message]:
        """Keep back what the processor holds back: of a held input, the records it admits
        all the same are processed up to the first it does not admit; the input is rewound
        to that one and paused until the processor lets it go (its position, which the
        transaction commits, stays there)."""
        held = set(self.processor.held_inputs())
        released = self._held - held
        if released:
            self.consumer.resume([TopicPartition(t, p) for t, p in released])
            log.info("%s inputs released", self.name, extra={"released": sorted(released)})
            self._held -= released
        if not held:
            return records
        kept = []
        for record in records:
            where = (record.topic() or "", record.partition() or 0)
            if where in self._held:
                continue  # fetched before the pause: read again once resumed
            if where in held and not self.processor.admits(record):
                self._held.add(where)
                self._at_end.discard(where)  # records wait there: not read to its end
                self.task.caught_up.discard(where[1])
                self.consumer.seek(TopicPartition(*where, record.offset() or 0))
                self.consumer.pause([TopicPartition(*where)])
                log.info("%s input held", self.name, extra={"held": where})
                continue
            kept.append(record)
        return kept

    def commit(self) -> None:
        """Commit the open transaction, if it holds anything: Kafka first, then the stores."""
        tx = self.task.take()
        if tx is None:
            return
        started = time.monotonic()
        outputs = list(tx.emits())
        try:
            self._ensure_topics({output.topic for output in outputs} - self._known_topics)
        except TopicRefusedError as exc:
            self.task.aborted(tx)
            rewind(self.consumer)
            log.warning("%s: %s; the batch is redone", self.name, exc)
            self.processor.topics_refused(exc.refused)
            return
        except KAFKA_FAILURES:
            self.task.aborted(tx)
            raise
        try:
            committed = transact(self.producer, self.consumer,
                                 lambda: self._produce(tx, outputs))  # fmt: skip
        except KAFKA_FAILURES:
            self._failing_since = self._failing_since or time.monotonic()
            self.task.aborted(tx)
            raise
        if not committed:
            self._failing_since = self._failing_since or time.monotonic()
            self.task.aborted(tx)
            metrics.ABORTED.labels(**self._metric_labels).inc()
            return
        self._failing_since = None
        observe_all(output.value for output in outputs)
        if self.partitions is not None:
            self.partitions.commit({p: work.state.tx for p, work in tx.partitions.items()})  # type: ignore[attr-defined]
        self.task.committed(tx)
        done = time.monotonic()
        self.schedule.committed(done)
        metrics.COMMIT_SECONDS.labels(**self._metric_labels).observe(done - started)
        metrics.TRANSACTIONS.labels(**self._metric_labels).inc()
        metrics.CONSUMED.labels(**self._metric_labels).inc(tx.consumed)

    def _store_size(self) -> None:
        assert self.partitions is not None
        keys = sum(store.estimated_keys() for store in list(self.partitions.stores.values()))
        metrics.STORE_KEYS.labels(**self._metric_labels).set(keys)

    def _produce(self, tx: OpenTransaction[S], outputs: list[Output]) -> None:
        # The records wait in the producer until the commit's flush, which sends each
        # broker's in one request (clients.TRANSACTIONAL_LINGER_MS).
        serialize = self.serialize
        for output in outputs:
            value = output.value
            data = serialize(value) if isinstance(value, Event) else bytes(value)
            send(self.producer, output.topic, data, output.key, **_placement(output))
        if self.partitions is not None:
            for p, work in tx.partitions.items():
                self.partitions.log(self.producer, p, work.state.flush())  # type: ignore[attr-defined]
        self.producer.poll(0)

    # -- topics and partitions -----------------------------------------------------------

    def _ensure_topics(self, names: set[str]) -> None:
        """Topics seen for the first time (new job types') are created with their settings,
        all of one transaction's in one request; TopicRefusedError names those the broker
        refused and the execution topics past the cluster's bound (the others are
        created)."""
        if not names:
            return
        specs = [spec for name in sorted(names) if (spec := self.topics.spec_of(name))]
        try:
            if specs:
                ensure_topics(self.settings.kafka_config, specs,
                              replication_factor=self.settings.replication_factor,
                              min_insync_replicas=self.settings.min_insync_replicas,
                              bound=self.topics.execution_bound())  # fmt: skip
        except TopicRefusedError as exc:
            self._known_topics |= names - exc.refused.keys()
            raise
        self._known_topics |= names

    def _check_visible(self, missing: set[str]) -> None:
        """A topic missing from the cluster's metadata may be one this principal may not
        see: asked for by name, the broker says which (then it is not a topic to create)."""
        changelog = self.processor.changelog
        for name in sorted(missing | ({changelog} if changelog else set())):
            metadata = self.consumer.list_topics(name, timeout=10).topics.get(name)
            error = None if metadata is None else metadata.error
            refused = self._refusal(error, topic=name, operation="DESCRIBE")
            if refused is not None:
                raise refused

    def _check_copartitioned(self, counts: Mapping[str, int]) -> None:
        """Partition p of every input and of the changelog make one store: counts must
        match (a changelog may have more while its inputs grow: it grows first)."""
        if self.processor.changelog is None:
            return
        names = (*self.processor.inputs, self.processor.changelog)
        found = {name: counts.get(name, 0) for name in names}
        inputs = {found[name] for name in self.processor.inputs}
        if 0 in found.values() or len(inputs) > 1 or found[names[-1]] < max(inputs):
            raise TopicMismatchError(
                f"the {self.name} processor needs {', '.join(names)} with equal partition "
                f"counts, found {found} (`jobstream topics create` makes them)"
            )

    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        assigned = self._stores_of(partitions)
        self._held = set()  # a new assignment starts unpaused
        self._at_end = set()  # and unread: each input's end is seen again
        strays = [tp for tp in partitions if tp.partition not in assigned]
        if strays:  # a pattern's topic counted otherwise than the inputs: never read here
            consumer.pause(strays)
            log.error("%s: partitions of a topic with another partition count than its "
                      "inputs' are not read (grow it: `jobstream topics grow`)", self.name,
                      extra={"paused": sorted((tp.topic, tp.partition) for tp in strays)})
        self._count_inputs()
        if self.partitions is not None:
            self.partitions.assign(assigned)
            self._store_retry_s = STORE_RETRY_FIRST_S
        self.task.assign(assigned)
        self._partitions_changed("assigned", assigned)

    def _count_inputs(self) -> None:
        """Tell the processor its inputs' partition counts (they may have grown). Asked
        through the producer, with the changelog's, so that its metadata is fresh too: it
        may write at once to a partition it has not seen yet (a new store's changelog)."""
        counts = {}
        changelog = () if self.processor.changelog is None else (self.processor.changelog,)
        timeout = self.options.kafka_timeout_s
        if self.partitions is not None:  # it restores the new stores next: no wait for it
            self.partitions.restorer.list_topics(self.partitions.changelog, timeout=timeout)
        for name in (*self.processor.inputs, *changelog):
            metadata = self.producer.list_topics(name, timeout=timeout)
            topic = metadata.topics.get(name)
            if topic is not None and topic.error is None:
                counts[name] = len(topic.partitions)
        self.processor.inputs_counted({name: counts[name] for name in self.processor.inputs
                                       if name in counts})  # fmt: skip

    def _stores_of(self, partitions: list[TopicPartition]) -> set[int]:
        """The partition numbers, each a store, that ``partitions`` of the inputs make up.
        A topic a pattern subscribes to (an owner's intake topic) rides along on those
        numbers: the assignor deals each topic out on its own, so a partition of one that
        does not match its inputs' is no store's, and another process may own that store."""
        if not self.processor.input_patterns:
            return {tp.partition for tp in partitions}
        return {tp.partition for tp in partitions if tp.topic in self.processor.inputs}

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        revoked = self._stores_of(partitions)
        self._held -= {(t, p) for t, p in self._held if p in revoked}
        self._at_end -= {(t, p) for t, p in self._at_end if p in revoked}
        self.task.revoke(revoked)
        if self.partitions is not None:
            self.partitions.revoke(revoked)
        self._partitions_changed("revoked", revoked)

    def _partitions_changed(self, what: str, partitions: set[int]) -> None:
        if not self.task.owned:
            self._unowned_since = self._unowned_since or time.monotonic()
        else:
            self._unowned_since = None
        metrics.PARTITIONS.labels(**self._metric_labels).set(len(self.task.owned))
        owned = sorted(self.task.owned)
        log.info("%s partitions %s", self.name, what,
                 extra={"changed": sorted(partitions), "partitions": owned})  # fmt: skip

    def _consume_error(self, message: Message) -> None:
        """An error: a fatal one (this static member fenced by another with its id) is
        raised for :meth:`recover`, the rest librdkafka retries."""
        error = message.error()
        refused = self._refusal(error, topic=message.topic(), operation="READ")
        if refused is not None:
            raise refused
        if is_fatal(error):
            raise KafkaException(error)
        else:
            log.warning("consume error: %s", error)


class Placement(TypedDict, total=False):
    """Where an output goes beyond its topic and key: produce()'s keyword arguments."""

    partition: int
    headers: list[tuple[str, bytes]]


def _placement(output: Output) -> Placement:
    if output.partition is None and output.headers is None:
        return {}
    placement: Placement = {}
    if output.partition is not None:
        placement["partition"] = output.partition
    if output.headers is not None:
        placement["headers"] = list(output.headers)
    return placement
