"""``jobstream submit | cancel | trigger | pause | resume | reschedule``: jobs from the shell.

``submit`` prints the job id and nothing else on stdout, so scripts can capture it. Every
argument is checked, with the rules of the Python client, before a connection to the
broker is opened: a bad one ends the command with exit code 2 and the field at fault
(``error: spec.cron.timezone: unknown time zone: 'Mars/Base'``). Other failures
(settings, delivery) are JobstreamErrors, which the root CLI turns into its exit codes.
"""

from __future__ import annotations

import getpass
import socket
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import typer

from jobstream._pipeline.cli_options import option_group
from jobstream._pipeline.clock import now_ms
from jobstream._pipeline.config import Settings, load_settings
from jobstream._pipeline.durations import DurationError, parse_duration
from jobstream._pipeline.errors import ValidationError
from jobstream._pipeline.jobs.client import JobClient
from jobstream._pipeline.jobs.key_options import key_options
from jobstream._pipeline.model import commands
from jobstream._pipeline.model.job import JobRequest
from jobstream._pipeline.scheduling.backfill import parse_instant_ms
from jobstream._pipeline.serde import Event

EXIT_INVALID = 2
"""A submission or command that breaks a rule; the same code as a usage error."""

SUBMIT_EPILOG = """Examples:

  jobstream submit --type report.generate --owner acme --at 2026-12-01T09:00Z --params @params.json

  jobstream submit --type data.process --owner acme --cron "0 9 * * MON-FRI" --tz Europe/Paris

  jobstream submit --type data.process --owner acme --cron "30 2 * * *" --tz Europe/Paris \\
      --skipped-hour skip --repeated-hour both --misfire run-all --catchup-window 6h \\
      --overlap skip --jitter 30s --max-runs 100 --start-at 2026-12-01T00:00Z

  ID=$(jobstream submit --type image.render --owner acme --params '{"w": 640}' --priority high)
"""


@contextmanager
def refusals() -> Iterator[None]:
    """A rule broken: say which field on stderr and exit 2."""
    try:
        yield
    except ValidationError as exc:
        typer.echo(f"error: {exc.field}: {exc.message}", err=True)
        raise typer.Exit(EXIT_INVALID) from None


def _params_text(value: str, field: str) -> str:
    """Inline JSON, ``@path`` for a file, ``@-`` for stdin."""
    if not value.startswith("@"):
        return value
    source = value[1:]
    try:
        return sys.stdin.read() if source == "-" else Path(source).read_text()
    except OSError as exc:
        raise ValidationError(field, f"cannot read {source}: {exc.strerror or exc}") from None


_CRON_FIELD = "spec.cron."


def _symbol(value: str) -> str:
    """An enum symbol as typed: ``run-all``, ``run_all`` and ``RUN_ALL`` are RUN_ALL."""
    return value.strip().upper().replace("-", "_")


def _whole(value: str, field: str) -> int:
    try:
        return int(value.strip())
    except ValueError:
        raise ValidationError(field, f"must be a whole number, got {value!r}") from None


_CRON_OPTIONS: dict[str, tuple[str, Callable[[str, str], str | int], str]] = {
    "skipped_hour": (
        "--skipped-hour", lambda v, _: _symbol(v), "DST, spring forward: a wall time that does "
        "not exist runs at the jump (run-after, the default) or not at all (skip)."),
    "repeated_hour": (
        "--repeated-hour", lambda v, _: _symbol(v), "DST, fall back: a wall time that occurs "
        "twice runs on its first occurrence (first, the default) or on both (both)."),
    "misfire": (
        "--misfire", lambda v, _: _symbol(v), "Runs missed while jobstream was down: skip, "
        "run-once (the default: one run for all) or run-all (each, within --catchup-window)."),
    "catchup_window_ms": (
        "--catchup-window", lambda v, f: parse_duration(v, option=f), "--misfire run-all: "
        "how far back missed runs are run, a duration (default 1h)."),
    "overlap": (
        "--overlap", lambda v, _: _symbol(v), "allow (the default) or skip: whether a run "
        "starts while the previous run of the schedule still runs."),
    "jitter_ms": (
        "--jitter", lambda v, f: parse_duration(v, option=f), "Spread each run over "
        "[0, jitter) after its time, a duration (default 0s)."),
    "max_runs": ("--max-runs", _whole, "Stop after this many runs."),
    "start_at_ms": (
        "--start-at", parse_instant_ms, "No run before this ISO 8601 instant with a zone."),
    "end_at_ms": ("--end-at", parse_instant_ms, "No run after this ISO 8601 instant with a zone."),
}  # fmt: skip
"""CronSchedule fields the command line sets: the option, how its text is read (CronSpec
then checks the value, naming the field) and its help."""

cron_policies = option_group(
    "policies",
    {name: (str | None, typer.Option(None, flag, help=text))
     for name, (flag, _, text) in _CRON_OPTIONS.items()},
    gather=dict,
)  # fmt: skip
"""A command that schedules takes the policy options (``--skipped-hour`` ... ``--end-at``)
as one parameter ``policies``: CronSchedule field -> text as typed, None when not given."""


def cron_fields(cron: str | None, tz: str | None, policies: dict[str, str | None], *,
                prefix: str = _CRON_FIELD) -> dict[str, str | int] | None:  # fmt: skip
    """The CronSchedule fields of ``--cron``, ``--tz`` and the policy options (``policies``:
    CronSchedule field -> text as typed); ValidationError naming ``prefix`` + the field at
    fault."""
    given = {name: text for name, text in policies.items() if text is not None}
    if cron is None:
        if tz is not None:
            raise ValidationError(prefix + "timezone", "--tz needs --cron")
        for name in given:
            raise ValidationError(prefix + name, f"{_CRON_OPTIONS[name][0]} needs --cron")
        return None
    fields: dict[str, str | int] = {"expression": cron, "timezone": tz or "UTC"}
    for name, text in given.items():
        fields[name] = _CRON_OPTIONS[name][1](text, prefix + name)
    return fields


def _labels(pairs: list[str]) -> dict[str, str]:
    labels = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise ValidationError("spec.labels", f"expected name=value, got {pair!r}")
        labels[name] = value
    return labels


DependsOnOption = typer.Option([], "--depends-on", help="Job id; repeatable.")
LabelOption = typer.Option([], "--label", help="name=value; repeatable.")


@cron_policies
def submit(
    job_type: str = typer.Option(..., "--type", help="Job type, e.g. report.generate."),
    owner: str = typer.Option(..., "--owner", help="Application, user or tenant."),
    params: str = typer.Option("{}", "--params", help="JSON object, @file or @- (stdin)."),
    at: str | None = typer.Option(
        None, "--at", help="Run once at this ISO 8601 instant with a zone, e.g. 2026-12-01T09:00Z."
    ),
    cron: str | None = typer.Option(None, "--cron", help="Run on this 5-field cron expression."),
    tz: str | None = typer.Option(None, "--tz", help="IANA zone --cron is read in (UTC)."),
    priority: str = typer.Option("normal", "--priority", help="high, normal or low."),
    idempotency_key: str | None = typer.Option(
        None, "--idempotency-key", help="Resubmitting with the same key gives the same job."
    ),
    timeout: str | None = typer.Option(
        None, "--timeout", help="Per-attempt timeout: a duration such as 90s, 5m, 1h, 250ms."
    ),
    max_attempts: int | None = typer.Option(
        None, "--max-attempts", help="Attempts in all (other retry settings: defaults)."
    ),
    deadline: str | None = typer.Option(
        None,
        "--deadline",
        help="No attempt starts past this: an ISO 8601 instant with a zone (2026-12-01T09:00Z) "
        "or a duration from now (30m, 2h); then the job ends EXPIRED.",
    ),
    queue_limit: str | None = typer.Option(
        None,
        "--queue-limit",
        help="The longest an attempt may wait QUEUED for a worker, a duration (30s, 5m); "
        "then the job ends EXPIRED.",
    ),
    depends_on: list[str] = DependsOnOption,
    workflow: str | None = typer.Option(None, "--workflow", help="Workflow (DAG) id."),
    label: list[str] = LabelOption,
    pool: str | None = typer.Option(
        None,
        "--pool",
        help="Run only in this worker pool, e.g. gpu (workers started with --pool gpu).",
    ),
    concurrency: str | None = typer.Option(
        None, "--concurrency", help="KEY[:LIMIT]: at most LIMIT (1) runs of the key at once "
        "across the fleet, e.g. 'customer-{params.id}:2' (docs/keys.md)."),
    rate: str | None = typer.Option(
        None, "--rate", help="KEY=RATE: the key's jobs fire at most at RATE, e.g. crm=100/min."),
    debounce: str | None = typer.Option(
        None, "--debounce", help="KEY=WINDOW: submissions of the key within WINDOW of one "
        "another run once, after it, e.g. customer-42=5s."),
    debounce_max: str | None = typer.Option(
        None, "--debounce-max", help="The longest a debounce window stays open (ten windows)."),
    debounce_keep: str | None = typer.Option(
        None, "--debounce-keep", help="last (default) or first: whose params the run takes."),
    singleton: str | None = typer.Option(
        None, "--singleton", help="KEY: while a job of the key is queued or running, a new "
        "one is dropped (or replaces the queued one: --singleton-mode replace)."),
    singleton_mode: str | None = typer.Option(
        None, "--singleton-mode", help="drop (default) or replace."),
    *,
    policies: dict[str, str | None],
) -> None:
    """Submit a job and print its id. A recurring job (--cron) takes the schedule's
    policies too: DST (--skipped-hour, --repeated-hour), misfires (--misfire,
    --catchup-window), --overlap, --jitter, --max-runs, --start-at and --end-at."""
    with refusals():
        # Text as typed: JobRequest parses and checks each field, naming it when it cannot.
        fields: dict[str, Any] = {
            "job_type": job_type,
            "owner": owner,
            "params": _params_text(params, "spec.params"),
            "run_at": at,
            "cron": cron_fields(cron, tz, policies),
            "priority": priority,
            "depends_on": depends_on,
            "retry": None if max_attempts is None else {"max_attempts": max_attempts},
            # Parsed here, not by the option's type: a bad one exits 2 naming the field.
            "timeout_ms": (
                None if timeout is None else parse_duration(timeout, option="spec.timeout_ms")
            ),
            "idempotency_key": idempotency_key,
            "workflow_id": workflow,
            "labels": _labels(label),
            "pool": pool,
            "deadline": None if deadline is None else deadline_of(deadline),
            "queue_limit_ms": (
                None
                if queue_limit is None
                else parse_duration(queue_limit, option="spec.queue_limit_ms")
            ),
            "keys": key_options(concurrency=concurrency, rate=rate, debounce=debounce,
                                debounce_max=debounce_max, debounce_keep=debounce_keep,
                                singleton=singleton, singleton_mode=singleton_mode),
        }
        request = JobRequest(**fields)
        request.to_event(now_ms())  # the rules that need the clock, still before the broker
    with JobClient(load_settings()) as client:
        job_id = client.submit(request)
    typer.echo(job_id)


def deadline_of(text: str) -> str | timedelta:
    """``--deadline`` as JobRequest takes it: a duration (``30m``) from the submission, or
    other text (an instant), which JobRequest reads and names ``spec.deadline_ms`` when it
    cannot."""
    try:
        return timedelta(milliseconds=parse_duration(text, option="spec.deadline_ms"))
    except DurationError:
        return text


JobIdArgument = typer.Argument(..., help="The job id submit printed.")
WorkflowOption = typer.Option(None, "--workflow", help="The job's workflow id, if it has one.")
ReasonOption = typer.Option(None, "--reason", help="Why, kept in the history.")
ByOption = typer.Option(None, "--by", help="Who asks, kept in the history "
                        "(default: cli:<user>@<host>).")  # fmt: skip
SetByOption = typer.Option(None, "--by", help="Who makes the change, recorded with it (default: "
                           "cli:<user>@<host>), with the principal it runs as.")  # fmt: skip


def requester(by: str | None) -> str:
    """Who a command from the shell names: ``--by``, else the shell's user and host."""
    if by:
        return by
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # no login name (a container's arbitrary uid)
        user = "unknown"
    return f"cli:{user}@{socket.gethostname()}"


def changed_by(by: str | None, settings: Settings) -> str:
    """Who a setting's change from the shell names: :func:`requester`, and the principal
    it runs as."""
    who = requester(by)
    return f"{who} as User:{settings.sasl_username}" if settings.sasl_username else who


def send_command(build: Callable[[], Event]) -> None:
    """Build a command (a refusal names the field and exits 2), then send it."""
    with refusals():
        event = build()
    with JobClient(load_settings()) as client:
        client.send_command(event)


def cancel(
    job_id: str = JobIdArgument,
    workflow: str | None = WorkflowOption,
    reason: str | None = ReasonOption,
    by: str | None = ByOption,
) -> None:
    """Cancel a job: its pending fire (a recurring job: every later run) and a run of it
    under way, which ends CANCELLED within a second or two."""
    send_command(lambda: commands.cancel_event(job_id, workflow, reason, now_ms=now_ms(),
                                        requested_by=requester(by)))  # fmt: skip


def trigger(job_id: str = JobIdArgument, workflow: str | None = WorkflowOption,
            reason: str | None = ReasonOption, by: str | None = ByOption) -> None:  # fmt: skip
    """Run a scheduled job now (a recurring one keeps its schedule)."""
    send_command(lambda: commands.trigger_event(job_id, workflow, now_ms=now_ms(),
                                         requested_by=requester(by), reason=reason))  # fmt: skip


def pause(job_id: str = JobIdArgument, workflow: str | None = WorkflowOption,
          reason: str | None = ReasonOption, by: str | None = ByOption) -> None:  # fmt: skip
    """Stop a recurring job from firing until it is resumed."""
    send_command(lambda: commands.pause_event(job_id, workflow, now_ms=now_ms(),
                                       requested_by=requester(by), reason=reason))  # fmt: skip


def resume(job_id: str = JobIdArgument, workflow: str | None = WorkflowOption,
           reason: str | None = ReasonOption, by: str | None = ByOption) -> None:  # fmt: skip
    """Let a paused recurring job fire again."""
    send_command(lambda: commands.resume_event(job_id, workflow, now_ms=now_ms(),
                                        requested_by=requester(by), reason=reason))  # fmt: skip


@cron_policies
def reschedule(
    job_id: str = JobIdArgument,
    cron: str | None = typer.Option(None, "--cron", help="New 5-field cron expression."),
    tz: str | None = typer.Option(None, "--tz", help="IANA zone --cron is read in (UTC)."),
    at: str | None = typer.Option(
        None, "--at", help="A pending one-off job's new run time: ISO 8601 with a zone."
    ),
    params: str | None = typer.Option(None, "--params", help="New params: JSON, @file or @-."),
    workflow: str | None = WorkflowOption,
    reason: str | None = ReasonOption,
    by: str | None = ByOption,
    *,
    policies: dict[str, str | None],
) -> None:
    """Give a recurring job a new schedule (--cron) or a pending one-off job a new run
    time (--at), new params, or params with either. The new schedule is whole: policies
    left out (--misfire, --jitter, ...) take their defaults, as on submit."""

    def build() -> Event:
        schedule = cron_fields(cron, tz, policies, prefix="cron.")
        text = None if params is None else _params_text(params, "params")
        return commands.update_schedule_event(job_id, schedule, text, workflow, run_at=at,
                                              now_ms=now_ms(), requested_by=requester(by),
                                              reason=reason)  # fmt: skip

    send_command(build)


def register(app: typer.Typer) -> None:
    """Add ``submit``, ``cancel``, ``trigger``, ``pause``, ``resume`` and ``reschedule``."""

    app.command("submit", epilog=SUBMIT_EPILOG)(submit)
    app.command("cancel")(cancel)
    app.command("trigger")(trigger)
    app.command("pause")(pause)
    app.command("resume")(resume)
    app.command("reschedule")(reschedule)
