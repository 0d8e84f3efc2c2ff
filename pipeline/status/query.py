"""jobs.status read back into a dict, and ``jobstream status`` on top of it.

A view by replay: the compacted topic is read from its beginning to its end (librdkafka's
partition EOF, which with read_committed stops at the last committed record), the newest
record of each job wins and a tombstone removes it. Small and simple, for the CLI, the
demo and tests; a service that answers many queries keeps such a view up to date instead
(connectors/).
"""

from __future__ import annotations

import logging
import time
import uuid

import typer
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition
from rich.console import Console
from rich.table import Table
from rich.text import Text

from jobstream._pipeline.clock import instant_of
from jobstream._pipeline.config import Settings, load_settings
from jobstream._pipeline.durations import duration_option
from jobstream._pipeline.errors import DeserializationError, JobstreamError
from jobstream._pipeline.kafka import clients
from jobstream._pipeline.kafka.denied import denied
from jobstream._pipeline.serde import JobState, JobStatus, decode_status, encode_status
from jobstream._pipeline.status.record import StatusFold, is_internal
from jobstream._pipeline.topics import Topics

log = logging.getLogger(__name__)

EXIT_NOT_FOUND = 1

TimeoutOption = duration_option(
    "30s", "--timeout", minimum="100ms", help="Give up reading jobs.status after this long.",
)  # fmt: skip


def read_statuses(
    settings: Settings,
    *,
    owner: str | None = None,
    state: JobState | None = None,
    job_id: str | None = None,
    workflow_id: str | None = None,
    timeout_s: float = 30.0,
) -> dict[str, JobStatus]:
    """The latest status of every job on jobs.status, by job id, filtered as asked.

    Raises JobstreamError when the topic is missing or not read to its end in time.
    """
    topic = Topics(settings).status
    # A group id is required by librdkafka, but this reader assigns partitions itself and
    # commits nothing, so it never joins the group.
    group = f"{settings.topic_prefix}jobstream.status-query.{uuid.uuid4().hex[:8]}"
    consumer = clients.consumer(settings, group, **{"enable.partition.eof": True})
    try:
        metadata = consumer.list_topics(topic, timeout=timeout_s).topics.get(topic)
        refused = denied(None if metadata is None else metadata.error, topic=topic,
                         operation="READ", principal=settings.sasl_username)  # fmt: skip
        if refused is not None:
            raise refused
        if metadata is None or metadata.error is not None or not metadata.partitions:
            raise JobstreamError(f"topic {topic} not found: run `jobstream topics create`")
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in metadata.partitions])
        statuses = _replay(consumer, set(metadata.partitions), owner, job_id, timeout_s)
    finally:
        consumer.close()
    return {key: s for key, s in statuses.items()
            if (state is None or s.state is state)
            and (workflow_id is None or s.workflow_id == workflow_id)}  # fmt: skip


def _replay(consumer: Consumer, pending: set[int], owner: str | None,
            job_id: str | None, timeout_s: float) -> dict[str, JobStatus]:  # fmt: skip
    statuses: StatusFold[JobStatus] = StatusFold()
    deadline = time.monotonic() + timeout_s
    while pending:
        if time.monotonic() > deadline:
            raise JobstreamError(f"jobs.status not read to its end within {timeout_s:g} s "
                                 f"(partitions {sorted(pending)} left)")  # fmt: skip
        for message in consumer.consume(10_000, timeout=0.2):
            error = message.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    pending.discard(message.partition() or 0)
                else:
                    log.warning("jobs.status read error: %s", error)
                continue
            key, value, headers = message.key() or b"", message.value(), message.headers()
            if (job_id is not None and key != job_id.encode()) or is_internal(key, headers):
                continue  # another job's, or the status store's own record
            try:
                status = decode_status(value) if value else None
            except DeserializationError as exc:
                log.warning("jobs.status record skipped: %s", exc.reason)
                continue
            statuses.fold(key, message.partition() or 0, status, headers)
    return {key.decode(): status for key, status in statuses.latest(_written_at).items()
            if owner is None or status.owner == owner}  # fmt: skip


def _written_at(status: JobStatus) -> int:
    return status.updated_at_ms


# -- jobstream status -------------------------------------------------------------------


def _when(ms: int | None) -> str:
    return "" if ms is None else f"{instant_of(ms):%Y-%m-%d %H:%M:%S}"


def progress_text(status: JobStatus) -> str:
    """``42% resizing tiles``: a job's progress for a table cell (as plain text: a handler's
    message is no console markup); empty without one."""
    if status.progress is None:
        return ""
    shown = f"{status.progress.fraction:.0%}"
    return f"{shown} {status.progress.message}" if status.progress.message else shown


def status_table(statuses: dict[str, JobStatus]) -> Table:
    """One row per job, oldest id first (ULIDs sort by creation)."""
    table = Table()
    table.add_column("job id", no_wrap=True)
    table.add_column("type", overflow="fold")
    table.add_column("owner", overflow="fold")
    table.add_column("state", no_wrap=True)
    table.add_column("attempt", justify="right")
    table.add_column("runs", justify="right")
    table.add_column("progress", overflow="fold")
    table.add_column("scheduled (UTC)", no_wrap=True)
    table.add_column("last error")
    for job_id in sorted(statuses):
        s = statuses[job_id]
        error = f"{s.last_error.error_type}: {s.last_error.message}" if s.last_error else ""
        table.add_row(job_id, s.job_type, s.owner, s.state.value, str(s.attempt), str(s.runs),
                      Text(progress_text(s)), _when(s.scheduled_at_ms), error)  # fmt: skip
    return table


def workflow_table(statuses: dict[str, JobStatus]) -> Table:
    """One row per step of a workflow: jobs that waited or wait for others after them."""
    table = Table()
    for column in ("step", "job id", "type", "state", "attempt", "waiting for", "last error"):
        table.add_column(column, no_wrap=column in ("job id", "state"))
    waited = {parent for s in statuses.values() for parent in s.waiting_for}
    # Parents first as far as the statuses tell (a blocked job after what it waits for),
    # then by id; a status carries no edges once a job is released.
    ordered = sorted(
        statuses.values(), key=lambda s: (bool(s.waiting_for), s.job_id not in waited, s.job_id)
    )
    for s in ordered:
        error = f"{s.last_error.error_type}: {s.last_error.message}" if s.last_error else ""
        table.add_row(s.step or "", s.job_id, s.job_type, s.state.value, str(s.attempt),
                      ", ".join(s.waiting_for), error)  # fmt: skip
    return table


def status(
    job_id: str | None = typer.Argument(None, help="One job, shown whole (JSON)."),
    owner: str | None = typer.Option(None, "--owner", help="Only this owner's jobs."),
    state: JobState | None = typer.Option(None, "--state", case_sensitive=False,
                                          help="Only jobs in this state."),
    workflow: str | None = typer.Option(None, "--workflow",
                                        help="One workflow's steps, parents before children."),
    timeout_ms: int = TimeoutOption,
) -> None:  # fmt: skip
    """Show jobs' latest states, read from jobs.status: a table, or one job's every field."""
    statuses = read_statuses(load_settings(), owner=owner, state=state, job_id=job_id,
                             workflow_id=workflow, timeout_s=timeout_ms / 1000)  # fmt: skip
    console = Console()
    if workflow is not None:
        if not statuses:
            typer.echo(f"error: no status for workflow {workflow}", err=True)
            raise typer.Exit(EXIT_NOT_FOUND)
        console.print(workflow_table(statuses))
    elif job_id is None:
        console.print(status_table(statuses))
    elif job_id in statuses:
        console.print_json(encode_status(statuses[job_id]).decode())
    else:
        typer.echo(f"error: no status for job {job_id}", err=True)
        raise typer.Exit(EXIT_NOT_FOUND)
