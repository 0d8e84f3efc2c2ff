"""What a benchmark run owns: a broker, topics under a fresh prefix, and a timer process.

Every run gets its own topic prefix and work folder (``<workdir>/<prefix>``: the timer's
state, its log, profiles), so runs never read each other's records.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import orjson
from confluent_kafka import OFFSET_BEGINNING, KafkaException, TopicPartition

from jobstream._ops.kafka.cluster import Layout, LocalCluster
from jobstream._ops.kafka.warmup import WARM_UP_S, warm_up
from jobstream._pipeline.clock import now_ms
from jobstream._pipeline.config import Settings, load_settings
from jobstream._pipeline.kafka import clients
from jobstream._pipeline.kafka.admin import ensure_topics
from jobstream._pipeline.serde import make_serde
from jobstream._pipeline.topics import Topics, TopicSpec

log = logging.getLogger(__name__)

JOB_TYPE = "bench.timer"
_, DESERIALIZE = make_serde()


class Broker(NamedTuple):
    bootstrap: str
    pids: dict[str, int]
    """The local broker's processes by name, to measure; empty for a given broker."""


@contextmanager
def broker(bootstrap: str | None, home: Path, port: int) -> Iterator[Broker]:
    """The given bootstrap servers, or a local broker in ``home`` stopped on exit.

    With ``bootstrap``, the processes of a local cluster in ``home`` (one started by
    ``jobstream kafka up --home``), if there is one, are measured: a warm broker, not
    one the run has just started, whose first minute is the JVM compiling its code. A
    broker the run starts is warmed up first (ops/kafka/warmup.py).
    """
    cluster = LocalCluster(home)
    if bootstrap:
        layout = cluster.layout()
        yield Broker(bootstrap, _pids(cluster, layout) if layout else {})
        return
    layout = cluster.up(port=port)
    try:
        warm_up(layout.bootstrap, seconds=WARM_UP_S)
        yield Broker(layout.bootstrap, _pids(cluster, layout))
    finally:
        cluster.down()


def _pids(cluster: LocalCluster, layout: Layout) -> dict[str, int]:
    return {f"kafka-{n.node_id}": pid for n in layout.nodes if (pid := cluster.pid(n))}


def settings_env(settings: Settings) -> dict[str, str]:
    """This process's environment (security settings and the like carry over) with the
    settings of a run, for the pipeline processes it starts."""
    return {
        **os.environ,
        "JOBSTREAM_BOOTSTRAP_SERVERS": settings.bootstrap_servers,
        "JOBSTREAM_TOPIC_PREFIX": settings.topic_prefix,
        "JOBSTREAM_TIMER_PARTITIONS": str(settings.timer_partitions),
        "JOBSTREAM_EXEC_PARTITIONS": str(settings.exec_partitions),
        "JOBSTREAM_JOB_TYPES": ",".join(settings.job_types),
        "JOBSTREAM_LOG_LEVEL": "INFO",
    }


@contextmanager
def run_topics(bootstrap: str, *, timer_partitions: int, exec_partitions: int,
               job_types: tuple[str, ...] = (JOB_TYPE,)) -> Iterator[Settings]:  # fmt: skip
    """Settings of one run: a topic prefix no other run uses, only the run's job types.
    Every topic under the prefix is deleted when the run ends: a broker reused by run after
    run (``--bootstrap``) would otherwise keep each run's partitions (76 for an end-to-end
    run) and answer slower as they pile up."""
    prefix = f"bench-{time.strftime('%H%M%S')}-{uuid.uuid4().hex[:6]}."
    settings = load_settings(bootstrap_servers=bootstrap, topic_prefix=prefix,
                             timer_partitions=timer_partitions, exec_partitions=exec_partitions,
                             job_types=job_types)  # fmt: skip
    try:
        yield settings
    finally:
        delete_run_topics(settings)


def delete_run_topics(settings: Settings) -> None:
    """Delete the topics under the run's prefix; a failure is logged, not raised: the run's
    results stand without it. Listing and deleting wait 10 s each at most, so that a run
    stopped by SIGTERM ends soon after its processes; a deletion the broker has not
    finished by then goes on without the run."""
    admin = clients.admin_client(settings.kafka_config)
    try:
        names = [name for name in admin.list_topics(timeout=_ADMIN_TIMEOUT_S).topics
                 if name.startswith(settings.topic_prefix)]  # fmt: skip
        if names:
            futures = admin.delete_topics(names, operation_timeout=_ADMIN_TIMEOUT_S,
                                          request_timeout=_ADMIN_TIMEOUT_S)  # fmt: skip
            for future in futures.values():
                future.result(timeout=_ADMIN_TIMEOUT_S)
    except (KafkaException, TimeoutError) as exc:
        log.warning("could not delete the topics under %s: %s", settings.topic_prefix, exc)


_ADMIN_TIMEOUT_S = 10


@contextmanager
def scratch_topic(bootstrap: str | None, home: Path, port: int, name: str, *,
                  compacted: bool = False) -> Iterator[tuple[Settings, str]]:  # fmt: skip
    """A broker (``bootstrap``'s, or one started here) with a fresh topic of one partition:
    the run's settings and the topic's name."""
    with (
        broker(bootstrap, home, port) as kafka,
        run_topics(kafka.bootstrap, timer_partitions=1, exec_partitions=1) as settings,
    ):
        topic = f"{settings.topic_prefix}{name}"
        ensure_topics(settings.kafka_config, [TopicSpec(topic, 1, compacted=compacted)],
                      replication_factor=settings.replication_factor)  # fmt: skip
        yield settings, topic


def create_topics(settings: Settings) -> None:
    """The run's topics; the broker is given 30 s and 100 ms more per partition (the top of
    the hour's 50 job types make about 1,100)."""
    specs = Topics(settings).specs()
    ensure_topics(settings.kafka_config, specs, replication_factor=settings.replication_factor,
                  timeout_s=30 + sum(spec.partitions for spec in specs) // 10)  # fmt: skip


class TimerProcess:
    """``python -m jobstream._pipeline timers`` as a child process, logging JSON lines to a file."""

    def __init__(self, settings: Settings, state_dir: Path, log_path: Path) -> None:
        env = settings_env(settings)
        self.log_path = log_path
        self.started = time.time()
        with open(log_path, "ab") as out:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "jobstream._pipeline", "timers", "--instance-id", "0",
                 "--state-dir", str(state_dir)],
                env=env, stdout=out, stderr=subprocess.STDOUT,
            )  # fmt: skip

    @property
    def pid(self) -> int:
        return self.process.pid

    def records(self) -> list[dict[str, Any]]:
        lines = self.log_path.read_bytes().splitlines() if self.log_path.exists() else []
        return [orjson.loads(line) for line in lines if line.startswith(b"{")]

    def wait_log(self, message: str, timeout_s: float) -> dict[str, Any]:
        """The first log record whose message starts with ``message``, once it appears."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"timer process exited ({self.process.returncode}); "
                                   f"see {self.log_path}")  # fmt: skip
            for record in self.records():
                if str(record.get("msg", "")).startswith(message):
                    return record
            time.sleep(0.1)
        raise TimeoutError(f"no {message!r} in {self.log_path} after {timeout_s:.0f}s")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def workdir_for(root: Path, settings: Settings) -> Path:
    path = root / settings.topic_prefix.rstrip(".")
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    return path


class CommittedWatch:
    """How far a consumer group has committed on a topic, against the topic's end offsets.

    By default the timer group on jobs.intake. On a topic written in transactions the end
    offsets count the commit markers too, which a group that has read everything may
    not have committed past (one per partition at its tail).
    """

    def __init__(self, settings: Settings, topic: str | None = None,
                 group: str = "jobstream.timers",
                 partitions: int | None = None) -> None:  # fmt: skip
        topic = topic or Topics(settings).intake
        count = partitions or settings.timer_partitions
        self.partitions = [TopicPartition(topic, p) for p in range(count)]
        self.consumer = clients.consumer(settings, f"{settings.topic_prefix}{group}")

    def end(self) -> int:
        return sum(self.consumer.get_watermark_offsets(tp, timeout=10, cached=False)[1]
                   for tp in self.partitions)  # fmt: skip

    def committed(self) -> int:
        return sum(max(tp.offset, 0) for tp in self.consumer.committed(self.partitions, 10))

    def close(self) -> None:
        self.consumer.close()


@dataclass
class Executions:
    """Reads the bench job type's execution records (read_committed) as they commit.

    Keeps the raw values with their arrival time and decodes them afterwards, so that
    reading costs the machine as little as possible while the timer works.
    """

    settings: Settings
    received: list[tuple[int, bytes]] = field(default_factory=list)

    def __post_init__(self) -> None:
        topic = Topics(self.settings).execution(JOB_TYPE, "NORMAL")
        self.consumer = clients.consumer(self.settings, f"{self.settings.topic_prefix}bench")
        self.consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING)
                              for p in range(self.settings.exec_partitions)])  # fmt: skip

    def poll(self, timeout_s: float = 0.1) -> int:
        # consume() with a timeout waits for the whole batch: wait for one record only,
        # then take what else has arrived, so the arrival times are not held back.
        first = self.consumer.poll(timeout_s)
        arrived = now_ms()
        if first is None:
            return 0
        messages = [first, *self.consumer.consume(10_000, timeout=0)]
        self.received.extend((arrived, m.value() or b"") for m in messages if m.error() is None)
        return len(messages)

    def decoded(self) -> list[tuple[int, int, int]]:
        """(scheduled_at_ms, fired_at_ms, arrived_ms) of every record read."""
        rows = []
        for arrived, raw in self.received:
            data = DESERIALIZE(raw).data
            rows.append((data["scheduled_at_ms"], data["fired_at_ms"], arrived))
        return rows

    def close(self) -> None:
        self.consumer.close()
