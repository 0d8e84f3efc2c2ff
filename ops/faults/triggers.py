"""The trigger scenario: a trigger's source fed at a steady rate while the trigger processor
and a broker node die.

Beside the run's load, :func:`triggers_under_kills` defines a trigger (owner
:data:`OWNER`) over a source topic of its own, replicated as the run's topics, whose
filter matches half the records, and starts a plain Kafka producer writing
:data:`RATE` records a second to it: even records match (``"status": "paid"``), odd ones
do not, and one in :data:`UNPARSEABLE_EVERY` is not JSON. Once jobs of the trigger run, it
SIGKILLs the trigger processor (started again 2 s later, as it was), then SIGKILLs the
Kafka node leading most partitions (started again after the outage), and stops the
producer :data:`TAIL_S` after that node is back.

The producer's delivery reports say where each record lies, hence the id of its job
(:func:`~jobstream._pipeline.triggers.ids.trigger_job_id`). Those jobs are awaited and
counted as the load's are (ops/faults/tally.py: lost, run more than once, flagged), and
:func:`trigger_tally` adds what only triggers promise: no job fired twice (FIRED events
on jobs.events per job id: the timers drop a second submission of an id), no job of the
trigger for a record that does not match, and every unparseable record once in
jobs.triggers.dlq (by its ``jobstream.source`` header).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson
from confluent_kafka import KafkaError, Message, Producer

from jobstream._ops.faults.app import JOB_TYPE
from jobstream._ops.faults.observer import Seen
from jobstream._pipeline.clock import now_ms
from jobstream._pipeline.config import Settings
from jobstream._pipeline.kafka.admin import ensure_topics
from jobstream._pipeline.kafka.headers import header, header_bytes
from jobstream._pipeline.kafka.scan import TopicScan
from jobstream._pipeline.topics import Topics, TopicSpec
from jobstream._pipeline.triggers.engine import SOURCE_HEADER, TRIGGER_HEADER
from jobstream._pipeline.triggers.ids import trigger_job_id
from jobstream._pipeline.triggers.model import Trigger
from jobstream._pipeline.triggers.template import JobTemplate
from jobstream._pipeline.triggers.topic import define_trigger

log = logging.getLogger(__name__)

OWNER = "faults-triggers"
NAME = "orders-paid"
SOURCE = "orders"
"""The source topic, under the run's prefix."""
SOURCE_PARTITIONS = 3
FILTER = 'value.status == "paid"'
RATE = 50
"""Source records a second."""
UNPARSEABLE_EVERY = 50
"""One source record in this many is not JSON (the rest alternate paid, new)."""
UNPARSEABLE = b"{not json"
FIRST_JOBS_S = 3.0
"""How long the source is fed before the trigger processor is killed: long enough for
it to read the trigger and submit jobs of it (it applies a trigger within a second)."""
BETWEEN_KILLS_S = 2.0
"""From the trigger processor healthy again to the broker node's kill."""
TAIL_S = 2.0
"""How long the source is still fed after the broker node is back."""
FLUSH_S = 60.0


def source_topic(settings: Settings) -> str:
    return f"{settings.topic_prefix}{SOURCE}"


def trigger(settings: Settings) -> Trigger:
    return Trigger(name=NAME, owner=OWNER, source=source_topic(settings), filter=FILTER,
                   job=JobTemplate(job_type=JOB_TYPE, params={"order": "value.id"}))  # fmt: skip


def record(i: int) -> tuple[bytes, bytes, bool | None]:
    """Source record ``i``: key, value, and whether it matches (None: it cannot be read)."""
    key = f"c-{i % 7}".encode()
    if i % UNPARSEABLE_EVERY == UNPARSEABLE_EVERY - 1:
        return key, UNPARSEABLE, None
    paid = i % 2 == 0
    return key, orjson.dumps({"id": i, "status": "paid" if paid else "new"}), paid


@dataclass(eq=False)
class SourceFeed(threading.Thread):
    """A plain Kafka producer (idempotent, acks=all) writing :data:`RATE` records a second
    to the source until halted; each delivered record is kept by where it lies."""

    settings: Settings
    rate: int = RATE
    halt: threading.Event = field(default_factory=threading.Event)
    matching: dict[str, int] = field(default_factory=dict)
    """Job id (derived from the record's place) -> when the record was delivered."""
    unparseable: set[str] = field(default_factory=set)
    """``topic/partition/offset`` of every unparseable record delivered."""
    produced: int = 0
    delivered: int = 0
    skipped: int = 0
    failed: list[str] = field(default_factory=list)
    """Records the producer gave up on (none expected: it retries through an outage)."""
    error: BaseException | None = None

    def __post_init__(self) -> None:
        super().__init__(name="faults-trigger-source", daemon=True)

    def run(self) -> None:
        try:
            self._feed()
        except BaseException as exc:  # reported with the run's numbers
            log.exception("the trigger source's producer failed")
            self.error = exc

    def _feed(self) -> None:
        topic = source_topic(self.settings)
        producer = Producer({**self.settings.kafka_config, "enable.idempotence": True,
                             "acks": "all", "linger.ms": 5,
                             "client.id": "faults-trigger-source",
                             "logger": log})  # fmt: skip
        started = time.monotonic()
        while not self.halt.is_set():
            due = int((time.monotonic() - started) * self.rate)
            while self.produced < due:
                key, value, matches = record(self.produced)
                producer.produce(topic, value, key, on_delivery=self._delivered(matches))
                self.produced += 1
            producer.poll(0.02)
        left = producer.flush(FLUSH_S)
        if left:
            self.failed.append(f"{left} records still undelivered after {FLUSH_S:.0f} s")

    def _delivered(self, matches: bool | None) -> Any:
        def report(error: KafkaError | None, message: Message) -> None:
            if error is not None:
                self.failed.append(str(error))
                return
            self.delivered += 1
            topic, partition, offset = message.topic(), message.partition(), message.offset()
            assert topic is not None and partition is not None and offset is not None
            if matches is None:
                self.unparseable.add(f"{topic}/{partition}/{offset}")
            elif matches:
                job_id = trigger_job_id(OWNER, NAME, topic, partition, offset)
                self.matching[job_id] = now_ms()
            else:
                self.skipped += 1

        return report


def start_feed(settings: Settings, replication: int) -> SourceFeed:
    """Create the source topic, define the trigger, start feeding the source."""
    ensure_topics(settings.kafka_config, [TopicSpec(source_topic(settings), SOURCE_PARTITIONS)],
                  replication_factor=replication)  # fmt: skip
    define_trigger(settings, trigger(settings))
    feed = SourceFeed(settings)
    feed.start()
    return feed


def dead_letters(settings: Settings) -> Counter[str]:
    """The trigger's records on jobs.triggers.dlq, per source place (``topic/partition/
    offset``)."""
    found: Counter[str] = Counter()
    label = f"{OWNER}/{NAME}".encode()
    with TopicScan(settings, Topics(settings).triggers_dlq) as scan:
        for batch in scan:
            for message in batch:
                headers = message.headers()
                place = header(headers, SOURCE_HEADER)
                if header_bytes(headers, TRIGGER_HEADER) == label and place is not None:
                    found[place] += 1
    return found


def trigger_tally(feed: SourceFeed, seen: Iterable[Seen], expected_elsewhere: set[str],
                  letters: Mapping[str, int]) -> dict[str, Any]:  # fmt: skip
    """What the trigger promises, from jobs.events and jobs.triggers.dlq: each matching
    record's job fired once, no other job, each unparseable record dead-lettered once.

    ``expected_elsewhere``: the ids of every other job of the run (the load's...): a job
    seen on jobs.events that is neither those nor a matching record's is one the trigger
    should not have submitted."""
    fired: Counter[str] = Counter()
    strangers: set[str] = set()
    for item in seen:
        job_id = item.event["job_id"]
        if job_id in feed.matching:
            if item.event["kind"] == "FIRED":
                fired[job_id] += 1
        elif job_id not in expected_elsewhere:
            strangers.add(job_id)
    twice = sorted(job_id for job_id, n in fired.items() if n > 1)
    unfired = sorted(set(feed.matching) - set(fired))
    missing = sorted(set(feed.unparseable) - set(letters))
    return {
        "source_records": feed.delivered,
        "matching": len(feed.matching),
        "skipped": feed.skipped,
        "unparseable": len(feed.unparseable),
        "undelivered": feed.failed[:5],
        "fired": len(fired),
        "never_fired": len(unfired),
        "fired_twice": len(twice),
        "jobs_not_of_a_matching_record": len(strangers),
        "dead_lettered": sum(1 for place in feed.unparseable if place in letters),
        "dead_letters_missing": len(missing),
        "dead_lettered_twice": sum(1 for place in feed.unparseable if letters.get(place, 0) > 1),
        "ids": {"never_fired": unfired[:10], "fired_twice": twice[:10],
                "not_of_a_matching_record": sorted(strangers)[:10],
                "dead_letters_missing": missing[:10]},
    }  # fmt: skip


def problems(found: Mapping[str, Any]) -> list[str]:
    """What makes a trigger run fail."""
    checks = (
        ("never_fired", "matching records without their job"),
        ("fired_twice", "trigger jobs fired twice"),
        ("jobs_not_of_a_matching_record", "jobs of no matching record"),
        ("dead_letters_missing", "unparseable records not in jobs.triggers.dlq"),
        ("dead_lettered_twice", "unparseable records dead-lettered twice"),
    )
    found_problems = [f"{found[key]} {what}" for key, what in checks if found[key]]
    if found["undelivered"]:
        found_problems.append(f"the source's producer failed: {found['undelivered']}")
    if not found["matching"] or not found["unparseable"]:
        found_problems.append("the source fed no matching or no unparseable record")
    return found_problems
