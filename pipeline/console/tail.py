"""``jobstream tail TOPIC``: a topic's records as JSON lines on standard output.

Reads every partition of the topic with read_committed (no consumer group, nothing
committed), from the end by default (what arrives from now on) or from the beginning,
and stops after ``limit`` records, at the end of the topic with ``--to-end``, or on
Ctrl-C. Each line is :func:`jobstream._pipeline.console.decode.record_line`.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import IO

import typer
from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, Consumer, KafkaError, TopicPartition

from jobstream._pipeline.config import Settings, load_settings
from jobstream._pipeline.console.decode import record_line
from jobstream._pipeline.errors import BrokerError
from jobstream._pipeline.kafka.scan import partitions_of, scan_consumer
from jobstream._pipeline.kafka.watermarks import watermarks
from jobstream._pipeline.serde import make_serde
from jobstream._pipeline.signals import stop_on_signals

EPILOG = """Examples:

  jobstream tail jobs.status --from-beginning --to-end | jq -c '.value | {job_id, state}'

  jobstream tail jobs.events --limit 20

  jobstream tail jobs.exec.report.generate.normal --from-beginning --limit 5
"""


def topic_name(settings: Settings, name: str) -> str:
    """``name`` as given, or with the configured topic prefix when it lacks it."""
    prefix = settings.topic_prefix
    return name if not prefix or name.startswith(prefix) else prefix + name


def tail_topic(settings: Settings, topic: str, out: IO[bytes], *, from_beginning: bool = False,
               limit: int | None = None, to_end: bool = False,
               stop: Callable[[], bool] = lambda: False) -> int:  # fmt: skip
    """Write the records of ``topic`` to ``out``, one JSON line each; return how many."""
    _, deserialize = make_serde(settings.schema_registry_url)
    consumer = scan_consumer(settings)
    written = 0
    try:
        owned = partitions_of(consumer, topic)
        start = OFFSET_BEGINNING if from_beginning else OFFSET_END
        consumer.assign([TopicPartition(topic, p, start) for p in owned])
        # Partitions with nothing left to read before the end: with --to-end, the rest.
        pending = {p for p in owned if _has_records(consumer, topic, p, from_beginning)}
        while not stop() and (limit is None or written < limit):
            if to_end and not pending:
                break
            for message in consumer.consume(500, timeout=0.2):
                error = message.error()
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF:
                        pending.discard(message.partition())
                        continue
                    raise BrokerError(f"reading {topic}: {error.str()}")
                out.write(record_line(message, deserialize) + b"\n")
                written += 1
                if limit is not None and written >= limit:
                    break
            out.flush()
    finally:
        consumer.close()
    return written


def _has_records(consumer: Consumer, topic: str, partition: int, from_beginning: bool) -> bool:
    low, high = watermarks(consumer, TopicPartition(topic, partition))
    return from_beginning and high > low


def tail(
    topic: str = typer.Argument(..., help="A topic, e.g. jobs.status (the prefix is added)."),
    from_beginning: bool = typer.Option(False, "--from-beginning",
                                        help="Start at the oldest record, not the end."),
    limit: int | None = typer.Option(None, "--limit", min=1, help="Stop after this many."),
    to_end: bool = typer.Option(False, "--to-end",
                                help="Stop at the end of the topic instead of waiting."),
) -> None:  # fmt: skip
    """Print a topic's records as JSON lines: Avro events decoded, JSON as it is."""
    settings = load_settings()
    stop = stop_on_signals()
    tail_topic(settings, topic_name(settings, topic), sys.stdout.buffer,
               from_beginning=from_beginning, limit=limit, to_end=to_end,
               stop=stop.is_set)  # fmt: skip
