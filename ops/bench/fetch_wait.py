"""Whether a consumer's fetch wait delays a committed record (the workers' ``WORKER_FETCH``).

``python -m ops.bench.fetch_wait`` commits one record at a time with a transactional
producer, ``--gap`` apart, while a read_committed consumer with ``fetch.min.bytes`` 1 and
each ``--wait`` reads them; it prints, per wait, the time from each commit's return to the
record's arrival, and the fetches the broker answered (librdkafka's statistics). The broker
answers a waiting fetch when a marker moves the stable offset, so the wait should bound the
empty fetches, not the delay. docs/benchmarks.md, "Issue 29, fourth step", records a run.
"""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

import typer

from ops.bench.harness import broker, run_settings
from ops.bench.options import BootstrapOption, KafkaHomeOption, PortOption, kafka_home_of
from ops.bench.report import console
from pipeline.kafka import clients
from pipeline.kafka.admin import ensure_topics
from pipeline.topics import TopicSpec


def main(
    waits: list[int] = typer.Option([10, 100, 500], "--wait", help="fetch.wait.max.ms to try."),
    commits: int = typer.Option(20, "--commits", min=1, help="Commits per wait."),
    gap_ms: int = typer.Option(230, "--gap", min=1, help="Time between commits, in ms."),
    kafka_home: Path | None = KafkaHomeOption,
    bootstrap: str | None = BootstrapOption,
    port: int = PortOption,
) -> None:
    """Delay from a commit to its record's arrival, and fetches, for each fetch wait."""
    with broker(bootstrap, kafka_home_of(kafka_home), port) as kafka:
        settings = run_settings(kafka.bootstrap, timer_partitions=1, exec_partitions=1)
        topic = f"{settings.topic_prefix}fetch-wait"
        ensure_topics(settings.kafka_config, [TopicSpec(topic, 1)],
                      replication_factor=settings.replication_factor)  # fmt: skip
        producer = clients.producer(settings, transactional_id=uuid.uuid4().hex)
        producer.init_transactions(30)
        for wait in waits:
            fetches: list[int] = []
            consumer = clients.consumer(
                settings, f"{topic}-{wait}-{uuid.uuid4().hex[:6]}",
                **{**clients.WORKER_FETCH, "fetch.wait.max.ms": wait,
                   "auto.offset.reset": "latest", "statistics.interval.ms": 1000,
                   "stats_cb": lambda stats: fetches.append(_fetches(stats))},
            )  # fmt: skip
            consumer.subscribe([topic])
            deadline = time.monotonic() + 30
            while not consumer.assignment() and time.monotonic() < deadline:
                consumer.poll(0.1)
            for _ in range(10):  # the position settles at the end
                consumer.poll(0.1)
            delays = []
            started = time.monotonic()
            for i in range(commits):
                producer.begin_transaction()
                producer.produce(topic, b"x", b"%d" % i)
                producer.commit_transaction(30)
                committed = time.monotonic()
                message = consumer.poll(10)
                while message is not None and message.error() is not None:
                    message = consumer.poll(10)
                if message is None:
                    raise SystemExit(f"wait {wait} ms: commit {i} not read within 10 s")
                delays.append(1000 * (time.monotonic() - committed))
                time.sleep(gap_ms / 1000)
            seconds = time.monotonic() - started
            consumer.poll(1.2)  # one more statistics report
            consumer.close()
            delays.sort()
            console.print(
                f"fetch.wait.max.ms {wait}: commit to arrival p50 {delays[len(delays) // 2]:.1f}"
                f" ms, max {delays[-1]:.1f} ms; about {max(fetches, default=0) / seconds:.0f}"
                " fetches a second"
            )


def _fetches(stats: str) -> int:
    """Fetch requests the consumer has sent to its brokers, from librdkafka's statistics."""
    brokers = json.loads(stats).get("brokers", {})
    return sum(b.get("req", {}).get("Fetch", 0) for b in brokers.values())


if __name__ == "__main__":
    typer.run(main)
