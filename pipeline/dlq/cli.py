"""``jobstream dlq list|show|redrive``: inspect the dead-letter topics and redrive jobs."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime

import orjson
import typer
from rich.console import Console
from rich.table import Table

from jobstream._pipeline.cli_options import JsonLinesOption, option_group
from jobstream._pipeline.clock import instant_of, ms_of, now_ms
from jobstream._pipeline.config import load_settings
from jobstream._pipeline.console.decode import bytes_as_json
from jobstream._pipeline.dlq.reader import DlqFilter, DlqReader, DlqRecord, line
from jobstream._pipeline.dlq.redrive import DEFAULT_RATE, Redriver, select
from jobstream._pipeline.durations import FORM, DurationError, parse_duration
from jobstream._pipeline.jobs.cli import ByOption, requester
from jobstream._pipeline.model.records import plain

EPILOG = """Examples:

  jobstream dlq list --type image.render --since 2h

  jobstream dlq list --error-type TimeoutError --owner acme --json

  jobstream dlq show 01JABCDEF...

  jobstream dlq redrive --type image.render --error-type ConnectionError --dry-run

  jobstream dlq redrive --since 2026-05-01T00:00Z --until 2026-05-02 --rate 20 --limit 500
"""

dlq_app = typer.Typer(
    help="Inspect dead-lettered jobs and put them back through the retry path.",
    epilog=EPILOG,
    no_args_is_help=True,
)
console = Console()

TypeOption = typer.Option(None, "--type", help="Job type: read only jobs.dlq.<type>.")
ErrorTypeOption = typer.Option(
    None, "--error-type", help="Type of the error that dead-lettered the job (its last error); "
    "a full name or its last dotted part.",
)  # fmt: skip
AnyAttemptOption = typer.Option(
    False, "--any-attempt", help="Match --error-type against every attempt's error."
)
OwnerOption = typer.Option(None, "--owner", help="Owner (application, user or tenant).")
ReasonOption = typer.Option(None, "--reason", help="exhausted or non_retryable.")
SinceOption = typer.Option(
    None, "--since", help="Dead-lettered at or after: ISO 8601 (UTC unless stated) or an age, "
    "a duration such as 90s, 30m, 2h, 7d.",
)  # fmt: skip
UntilOption = typer.Option(None, "--until", help="Dead-lettered before; same forms as --since.")


def parse_instant(text: str, now_ms: int, option: str) -> int:
    """Epoch ms of an ISO 8601 instant (UTC when no offset is given) or of an age ago."""
    with contextlib.suppress(DurationError):  # not an age: then an instant
        return now_ms - parse_duration(text, option=option)
    try:
        moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise typer.BadParameter(
            f"{text!r} is neither an ISO 8601 instant nor an age, {FORM}", param_hint=option
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return ms_of(moment)


def _selection(job_type: str | None, error_type: str | None, any_attempt: bool,
               owner: str | None, reason: str | None, since: str | None,
               until: str | None) -> DlqFilter:  # fmt: skip
    now = now_ms()
    return DlqFilter(
        job_type=job_type, error_type=error_type, any_attempt=any_attempt, owner=owner,
        reason=reason, since_ms=None if since is None else parse_instant(since, now, "--since"),
        until_ms=None if until is None else parse_instant(until, now, "--until"),
    )  # fmt: skip


selected = option_group("selection", {
    "job_type": (str | None, TypeOption), "error_type": (str | None, ErrorTypeOption),
    "any_attempt": (bool, AnyAttemptOption), "owner": (str | None, OwnerOption),
    "reason": (str | None, ReasonOption), "since": (str | None, SinceOption),
    "until": (str | None, UntilOption),
}, gather=_selection)  # fmt: skip
"""A command that picks dead letters takes the filter options (``--type`` ... ``--until``)
as one parameter ``selection``, the DlqFilter they make."""


def _utc(ms: int | None) -> str:
    if ms is None:
        return "-"
    return instant_of(ms).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + "Z"


def _json_line(value: Mapping[str, object]) -> None:
    """One JSON object (of builtins; bytes, a checkpoint's, as ``base64:<...>``) on a line."""
    typer.echo(orjson.dumps(value, default=bytes_as_json).decode())


@dlq_app.command("list")
@selected
def list_dead_letters(
    selection: DlqFilter,
    limit: int = typer.Option(100, "--limit", min=1, help="Show the newest this many."),
    as_json: bool = JsonLinesOption,
) -> None:  # fmt: skip
    """List dead-lettered jobs, oldest first (the newest --limit of those that match)."""
    with DlqReader(load_settings()) as reader:
        rows = sorted((line(r) for r in reader.read(selection)),
                      key=lambda row: (row["dead_lettered_at_ms"], row["job_id"]))  # fmt: skip
    shown = rows[-limit:]
    if as_json:
        for row in shown:
            _json_line(row)
        return
    table = _table("dead-lettered (UTC)", "job id", "type", "owner", "reason", "attempts",
                   "last error")  # fmt: skip
    for row in shown:
        error = f"{row['error_type'] or '-'}: {(row['message'] or '')[:80]}"
        table.add_row(_utc(row["dead_lettered_at_ms"]), row["job_id"], row["job_type"],
                      row["owner"], row["reason"], str(row["attempts"]), error)  # fmt: skip
    console.print(table)
    more = f", the newest {len(shown)} shown" if len(shown) < len(rows) else ""
    matches = "dead-lettered job matches" if len(rows) == 1 else "dead-lettered jobs match"
    console.print(f"{len(rows)} {matches}{more}")


@dlq_app.command("show")
def show(
    job_id: str = typer.Argument(..., help="The job id."),
    as_json: bool = typer.Option(False, "--json", help="The full records as JSON lines."),
) -> None:
    """Show every dead letter of a job: its spec and every attempt's error with traceback."""
    with DlqReader(load_settings()) as reader:
        records = list(reader.read(DlqFilter(job_id=job_id)))
    if not records:
        console.print(f"no dead letter for job {job_id}")
        raise typer.Exit(1)
    for record in records:
        if as_json:
            _json_line(plain(record.data) | {"topic": record.topic,
                       "partition": record.partition, "offset": record.offset})  # fmt: skip
        else:
            _print_record(record)


def _print_record(record: DlqRecord) -> None:
    data = record.data
    spec = data.spec
    console.rule(f"[bold]{record.job_id}[/bold]  {record.topic}/{record.partition}@{record.offset}")
    for name, value in (
        ("type", spec.job_type), ("owner", spec.owner), ("priority", spec.priority),
        ("workflow", data.workflow_id), ("idempotency key", data.idempotency_key),
        ("reason", data.reason), ("attempts", data.attempts),
        ("dead-lettered", _utc(data.dead_lettered_at_ms)), ("params", _clip(spec.params, 2000)),
    ):  # fmt: skip
        console.print(f"[bold]{name:>16}[/bold]  {value if value is not None else '-'}",
                      markup=True, highlight=False)  # fmt: skip
    for error in record.errors:
        retryable = "retryable" if error.retryable else "not retryable"
        console.print(f"\n[bold]attempt {error.attempt}[/bold] at {_utc(error.at_ms)}"
                      f" on {error.worker_id or '-'}: [red]{error.error_type}[/red]"
                      f" ({retryable})", highlight=False)  # fmt: skip
        console.print(error.message, markup=False, highlight=False)
        if error.traceback:
            console.print(error.traceback, markup=False, highlight=False)


def _clip(text: str, size: int) -> str:
    return text if len(text) <= size else f"{text[:size]}... ({len(text)} characters)"


@dlq_app.command("redrive")
@selected
def redrive(
    selection: DlqFilter,
    rate: float = typer.Option(DEFAULT_RATE, "--rate", min=0.001, help="Jobs per second at most."),
    limit: int | None = typer.Option(None, "--limit", min=1, help="Redrive at most this many "
                                     "(the oldest first)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Show what would be redriven."),
    why: str | None = typer.Option(None, "--why", help="Why, kept in each job's history."),
    by: str | None = ByOption,
) -> None:  # fmt: skip
    """Put dead-lettered jobs back through jobs.retry: same id, history and idempotency key.

    Each job runs once more, at once, as its next attempt.
    A job dead-lettered several times is redriven once, from its latest dead letter.
    """
    settings = load_settings()
    with DlqReader(settings) as reader:
        chosen = select(reader.read(selection), limit)
    if not chosen:
        console.print("nothing to redrive")
        return
    redriver = Redriver(settings, rate=rate)
    try:
        with console.status(f"redriving {len(chosen)} jobs at {rate:g}/s ..."):
            report = redriver.redrive(chosen, dry_run=dry_run, requested_by=requester(by),
                                      reason=why)  # fmt: skip
    finally:
        redriver.close()
    _print_redriven(report.redriven, dry_run, report.elapsed_s)


def _print_redriven(records: Iterable[DlqRecord], dry_run: bool, elapsed_s: float) -> None:
    table = _table("job id", "type", "owner", "next attempt", "last error")
    count = 0
    for record in records:
        count += 1
        last = record.last_error
        next_attempt = str(record.data.attempts + 1)
        table.add_row(record.job_id, record.job_type, record.owner, next_attempt,
                      "-" if last is None else last.error_type)  # fmt: skip
    console.print(table)
    verb = "would be redriven (dry run)" if dry_run else f"redriven in {elapsed_s:.1f}s"
    console.print(f"{count} {'job' if count == 1 else 'jobs'} {verb}")


def _table(*columns: str) -> Table:
    """A table whose ids and instants never wrap, so they can be copied from the terminal."""
    table = Table()
    for name in columns:
        table.add_column(name, no_wrap=name in ("job id", "dead-lettered (UTC)"))
    return table
