"""Run pipeline processes for tests, and read what they produced."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import TopicPartition

from jobstream._ops.stack import process_env as process_env
from jobstream._pipeline.config import Settings
from jobstream._pipeline.kafka import clients
from jobstream._pipeline.runtime.runner import Runner
from jobstream._pipeline.serde import Event, make_serde
from jobstream._pipeline.topics import PRIORITIES, Topics

SERIALIZE, DESERIALIZE = make_serde()


def produce(settings: Settings, topic: str, events: Iterable[Event | bytes]) -> int:
    producer = clients.producer(settings)
    count = 0
    for event in events:
        if isinstance(event, Event):
            producer.produce(topic, SERIALIZE(event), event.data["job_id"].encode())
        else:
            producer.produce(topic, event, b"raw")
        count += 1
        if count % 10_000 == 0:
            producer.flush(30)
    assert producer.flush(60) == 0
    return count


@contextmanager
def in_thread(runner: Runner[Any]) -> Iterator[threading.Thread]:
    """``runner`` running in a thread of its own for the block, then stopped and joined."""
    stop = threading.Event()
    thread = threading.Thread(target=runner.run, args=(stop,), daemon=True)
    thread.start()
    try:
        yield thread
    finally:
        stop.set()
        thread.join(60)


def start_timers(settings: Settings, instance: str, state_dir: Path, log: Path) -> subprocess.Popen:
    with open(log, "ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "jobstream._pipeline", "timers", "--instance-id", instance,
             "--state-dir", str(state_dir)],
            env=process_env(settings), stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip


@dataclass
class Executions:
    """Reads the execution topics of one job type with read_committed, from the start."""

    settings: Settings
    job_type: str = "data.process"
    runs: Counter[str] = field(default_factory=Counter)
    records: dict[str, dict] = field(default_factory=dict)

    def __post_init__(self) -> None:
        topics = Topics(self.settings)
        self.consumer = clients.consumer(self.settings, "unused")
        self.consumer.assign([
            TopicPartition(topics.execution(self.job_type, prio), p, 0)
            for prio in PRIORITIES for p in range(self.settings.exec_partitions)
        ])  # fmt: skip

    def poll(self) -> int:
        for message in self.consumer.consume(5000, timeout=0.2):
            if message.error() is None:
                data = DESERIALIZE(message.value()).data
                self.runs[data["execution_id"]] += 1
                self.records[data["execution_id"]] = data
        return len(self.runs)

    def duplicates(self) -> dict[str, int]:
        return {key: n for key, n in self.runs.items() if n > 1}

    def close(self) -> None:
        self.consumer.close()
