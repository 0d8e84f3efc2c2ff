"""Whether a consumer's fetch wait delays a committed record (the workers' ``WORKER_FETCH``).

``python -m jobstream._ops.bench.fetch_wait`` commits one record at a time with a transactional
producer, ``--gap`` apart, while a read_committed consumer with ``fetch.min.bytes`` 1 and
each ``--wait`` reads them; it prints, per wait, the time from each commit's return to the
record's arrival, and the fetches the broker answered (librdkafka's statistics). The broker
answers a waiting fetch when a marker moves the stable offset, so the wait should bound the
empty fetches, not the delay. docs/benchmarks.md, "Fetch waits", gives a run's figures.
"""

from __future__ import annotations

import json
import time
import uuid
from functools import partial
from pathlib import Path

import typer

from jobstream._ops.bench.harness import scratch_topic
from jobstream._ops.bench.options import BootstrapOption, KafkaHomeOption, PortOption, kafka_home_of
from jobstream._ops.bench.report import console
from jobstream._pipeline.kafka import clients


def main(
    waits: list[int] = typer.Option([10, 100, 500], "--wait", help="fetch.wait.max.ms to try."),
    commits: int = typer.Option(20, "--commits", min=1, help="Commits per wait."),
    gap_ms: int = typer.Option(230, "--gap", min=1, help="Time between commits, in ms."),
    kafka_home: Path | None = KafkaHomeOption,
    bootstrap: str | None = BootstrapOption,
    port: int = PortOption,
) -> None:
    """Delay from a commit to its record's arrival, and fetches, for each fetch wait."""
    home = kafka_home_of(kafka_home)
    with scratch_topic(bootstrap, home, port, "fetch-wait") as (settings, topic):
        producer = clients.producer(settings, transactional_id=uuid.uuid4().hex)
        producer.init_transactions(30)
        for wait in waits:
            fetches: list[tuple[float, int]] = []
            consumer = clients.consumer(
                settings, f"{topic}-{wait}-{uuid.uuid4().hex[:6]}",
                **{**clients.WORKER_FETCH, "fetch.wait.max.ms": wait,
                   "auto.offset.reset": "latest", "statistics.interval.ms": 1000,
                   "stats_cb": partial(_count_fetches, fetches)},
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
            consumer.poll(1.2)  # one more statistics report
            consumer.close()
            delays.sort()
            console.print(
                f"fetch.wait.max.ms {wait}: commit to arrival p50 {delays[len(delays) // 2]:.1f}"
                f" ms, max {delays[-1]:.1f} ms; {_rate(fetches, started):.0f} fetches a second"
            )


def _count_fetches(counts: list[tuple[float, int]], stats: str) -> None:
    """Append when, and how many fetch requests the consumer has sent so far (librdkafka's
    statistics)."""
    brokers = json.loads(stats).get("brokers", {})
    counts.append((time.monotonic(),
                   sum(b.get("req", {}).get("Fetch", 0) for b in brokers.values())))  # fmt: skip


def _rate(counts: list[tuple[float, int]], since: float) -> float:
    """Fetches a second between the reports after ``since`` (0 with fewer than two)."""
    during = [(at, n) for at, n in counts if at >= since]
    if len(during) < 2:
        return 0.0
    (first_at, first), (last_at, last) = during[0], during[-1]
    return (last - first) / (last_at - first_at)


if __name__ == "__main__":
    typer.run(main)
