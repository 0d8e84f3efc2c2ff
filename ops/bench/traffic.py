"""What one job costs the broker: records and bytes per topic, per job.

``python -m jobstream._ops.bench.traffic --jobs 2000`` runs that many one-off no-op jobs through the
pipeline as ``jobstream bench`` does (ops/bench/pipeline_run.py, paced at ``--rate``),
then counts, for every topic of the run's prefix:

- **records**: the data records a read_committed consumer gets from the start;
- **offsets**: how far the partitions' end offsets moved; the difference from records is
  the transactions' commit markers (and aborted records, if any);
- **payload bytes**: key, value and headers of the records, as a client sees them;
- **log bytes**: the size of the partitions' log files on the local broker's disk
  (record batches with their headers, compressed as produced, markers included): what
  the broker wrote, and what a consumer of the topic fetches.

jobs.events is broken down by lifecycle kind, and the changelogs into writes and deletes
(the status processor's by key space: ``j`` job records, ``e`` running executions). Each
figure is divided by the jobs that completed. docs/benchmarks.md, "Records and bytes per
job", records a run.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import orjson
import typer
from rich.table import Table

from jobstream._ops.bench import options
from jobstream._ops.bench.harness import broker, run_topics
from jobstream._ops.bench.load import Load
from jobstream._ops.bench.pipeline_run import PipelineShape, run_pipeline
from jobstream._ops.bench.report import console, load_average, progress_bar, write_results
from jobstream._ops.kafka.ports import free_ports
from jobstream._pipeline.config import Settings
from jobstream._pipeline.kafka import clients
from jobstream._pipeline.kafka.headers import Headers, header_bytes, header_pairs
from jobstream._pipeline.kafka.scan import TopicScan
from jobstream._pipeline.serde.peek import lifecycle_kind
from jobstream._pipeline.status.record import EXECUTION_HEADER, is_internal, is_moved

WRITERS = {
    "jobs.intake": "client",
    "jobs.retry": "retry router",
    "jobs.timers.changelog": "timers",
    "jobs.exec.": "timers",
    "jobs.events": "timers, workers, status processor, retry router",
    "jobs.status": "status processor",
    "jobs.status.handover": "status processor, when jobs.events grows",
    "jobs.workers": "workers",
    "jobs.results": "workers",
    "jobs.logs": "workers",
    "jobs.checkpoints": "workers",
    "jobs.dlq.": "retry router",
}
"""Who writes each topic (the first key a topic name starts with)."""

READERS = {
    "jobs.intake": "timers",
    "jobs.retry": "timers",
    "jobs.timers.changelog": "timers, on restore only",
    "jobs.exec.": "workers",
    "jobs.events": "status processor, retry router",
    "jobs.status": "views (API), console consumers; status processor, on restore",
    "jobs.status.handover": "status processor",
    "jobs.workers": "views (API)",
    "jobs.results": "views (API)",
    "jobs.logs": "views (API)",
    "jobs.checkpoints": "console consumers",
}
"""Who reads each topic in production (the first key a topic name starts with)."""


@dataclass
class Traffic:
    records: int = 0
    offsets: int = 0
    payload_bytes: int = 0
    log_bytes: int | None = None
    kinds: dict[str, tuple[int, int]] | None = None
    """Per kind of record (see :func:`kind_of`), its records and their payload bytes."""


def count_topic(settings: Settings, topic: str) -> Traffic:
    """Every committed record of ``topic`` from its start, counted (not decoded)."""
    kinds: Counter[str] = Counter()
    kind_bytes: Counter[str] = Counter()
    with TopicScan(settings, topic) as scan:
        traffic = Traffic(offsets=scan.total)
        for batch in scan:
            for message in batch:
                value, key = message.value() or b"", message.key() or b""
                headers = header_pairs(message)
                traffic.records += 1
                size = len(key) + len(value) + sum(len(k) + len(v) for k, v in headers)
                traffic.payload_bytes += size
                kind = kind_of(topic, key, value, headers)
                kinds[kind] += 1
                kind_bytes[kind] += size
    if len(kinds) > 1 or "" not in kinds:
        traffic.kinds = {str(kind): (n, kind_bytes[kind]) for kind, n in kinds.items()}
    return traffic


def kind_of(topic: str, key: bytes, value: bytes, headers: Headers = None) -> str:
    """A lifecycle event's kind; whether a changelog record deletes; for jobs.status (the
    status store's changelog), the state a job's record shows and whether it carries its
    running execution, and the store's own records."""
    if topic.endswith("jobs.events"):
        return lifecycle_kind(value) or "other"
    if topic.endswith(".changelog"):
        return "delete" if not value else "write"
    if topic.endswith("jobs.status"):
        if is_internal(key, headers):
            return "internal"
        if not value:
            return "delete moved" if is_moved(headers) else "delete"
        state = orjson.loads(value).get("state", "?")
        running = " running" if header_bytes(headers, EXECUTION_HEADER) else ""
        return f"write {state}{running}"
    return ""


def log_bytes(data_dirs: list[Path], topic: str) -> int | None:
    """Bytes of the topic's log segments on the local broker (None: no broker here)."""
    folders = [
        f for d in data_dirs for f in d.glob(f"{topic}-*") if f.name.rpartition("-")[0] == topic
    ]
    if not folders:
        return None
    return sum(s.stat().st_size for f in folders for s in f.glob("*.log"))


def count_all(settings: Settings, data_dirs: list[Path]) -> dict[str, Traffic]:
    admin = clients.admin_client(settings.kafka_config)
    found = admin.list_topics(timeout=10).topics
    counted = {}
    for name in sorted(n for n in found if n.startswith(settings.topic_prefix)):
        traffic = count_topic(settings, name)
        traffic.log_bytes = log_bytes(data_dirs, name)
        counted[name.removeprefix(settings.topic_prefix)] = traffic
    return counted


def who(table: dict[str, str], topic: str) -> str:
    """The entry of ``table`` for ``topic``: the longest key the name starts with."""
    return next((who for start, who in sorted(table.items(), key=lambda kv: -len(kv[0]))
                 if topic.startswith(start)), "nobody in the pipeline")  # fmt: skip


def table(counted: dict[str, Traffic], jobs: int) -> Table:
    out = Table(title=f"per job ({jobs:,} one-off no-op jobs that succeeded)")
    for column in ("topic", "records", "markers", "payload B", "log B", "written by", "read by"):
        numeric = column in ("records", "markers", "payload B", "log B")
        out.add_column(column, justify="right" if numeric else "left")
    for topic, t in counted.items():
        if not t.offsets:
            continue
        log = "-" if t.log_bytes is None else f"{t.log_bytes / jobs:,.0f}"
        out.add_row(topic, f"{t.records / jobs:.2f}", f"{(t.offsets - t.records) / jobs:.2f}",
                    f"{t.payload_bytes / jobs:,.0f}", log, who(WRITERS, topic),
                    who(READERS, topic))  # fmt: skip
        for kind, (n, size) in sorted((t.kinds or {}).items()):
            out.add_row(f"  {kind}", f"{n / jobs:.2f}", "", f"{size / jobs:,.0f}", "", "", "")
    return out


def main(
    jobs: int = typer.Option(2000, "--jobs", min=1, help="One-off no-op jobs to run."),
    rate: int = typer.Option(200, "--rate", min=1, help="Jobs due per second."),
    ahead: float = typer.Option(5.0, "--ahead", min=0.001,
                                help="Seconds each job is submitted before it falls due "
                                     "(0.001: jobs due at once)."),
    partitions: int = typer.Option(6, "--partitions", min=1, help="Timer and exec partitions."),
    bootstrap: str | None = options.BootstrapOption,
    port: int = options.PortOption,
    workdir: Path = options.WorkdirOption,
    kafka_home: Path | None = options.KafkaHomeOption,
    out: Path | None = options.OutOption,
) -> None:  # fmt: skip
    """Count the records and bytes per job on every topic, for one-off no-op jobs."""
    home = options.kafka_home_of(kafka_home, workdir)
    report: dict[str, Any] = {"jobs": jobs, "rate": rate, "ahead_s": ahead,
                              "load_average_start": load_average()}  # fmt: skip
    with (
        broker(bootstrap, home, port) as kafka,
        progress_bar() as bar,
        run_topics(kafka.bootstrap, timer_partitions=partitions, exec_partitions=partitions,
                   job_types=("bench.noop",)) as settings,
    ):
        load = Load.steady(rate, jobs / rate, ahead)
        shape = PipelineShape(metrics_port=free_ports(4))  # beside other runs' processes
        run = run_pipeline(settings, load, shape, workdir, kafka.pids, bar)
        counted = count_all(settings, sorted(home.glob("node-*/data")))
    completed = run["completed"]
    report.update(completed=completed, lost=run["lost"], load_average_end=load_average(),
                  topics={name: asdict(t) for name, t in counted.items()})  # fmt: skip
    console.print(table(counted, max(completed, 1)))
    write_results(out, report)


if __name__ == "__main__":
    typer.run(main)
