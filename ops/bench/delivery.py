"""What a delivery report per record costs a transactional producer.

``python -m jobstream._ops.bench.delivery`` produces transactions of ``--records`` changelog-sized
records (250 bytes) to one partition of a compacted topic, with the engine's producer
settings, alternately with a delivery callback on every record and on the last record
only (what ``PartitionStores.log`` asks for), and prints the CPU per record of each, over
``--rounds`` rounds. docs/benchmarks.md, "Delivery reports", records a run.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from statistics import median

import typer
from confluent_kafka import Message

from jobstream._ops.bench.harness import scratch_topic
from jobstream._ops.bench.options import BootstrapOption, KafkaHomeOption, PortOption, kafka_home_of
from jobstream._ops.bench.report import console
from jobstream._pipeline.kafka import clients


def main(
    records: int = typer.Option(30_000, "--records", min=1, help="Records per transaction."),
    rounds: int = typer.Option(6, "--rounds", min=1, help="Transactions of each kind."),
    kafka_home: Path | None = KafkaHomeOption,
    bootstrap: str | None = BootstrapOption,
    port: int = PortOption,
) -> None:
    """CPU per record of a transaction, a delivery report per record against one per batch."""
    home = kafka_home_of(kafka_home)
    with scratch_topic(bootstrap, home, port, "delivery", compacted=True) as (settings, topic):
        producer = clients.producer(settings, transactional_id=uuid.uuid4().hex)
        producer.init_transactions(30)
        offsets: list[int] = []

        def report(err: object, message: Message) -> None:
            offsets.append(message.offset() or 0)

        value = b"x" * 250
        cost: dict[str, list[float]] = {"every record": [], "last record": []}
        for _ in range(rounds):
            for mode in cost:
                producer.begin_transaction()
                started = time.process_time()
                for i in range(records):
                    if mode == "every record" or i == records - 1:
                        producer.produce(topic, value, b"k%d" % i, partition=0, on_delivery=report)
                    else:
                        producer.produce(topic, value, b"k%d" % i, partition=0)
                producer.flush(30)
                producer.commit_transaction(30)
                cost[mode].append(1e6 * (time.process_time() - started) / records)
    for mode, per_record in cost.items():
        console.print(f"a delivery report on the {mode}: µs of CPU per record, best "
                      f"{min(per_record):.2f}, median {median(per_record):.2f}")  # fmt: skip


if __name__ == "__main__":
    typer.run(main)
