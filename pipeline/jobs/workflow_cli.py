"""``jobstream workflow submit | cancel | pause | resume | trigger | update | status``:
workflows from the shell (the last five: a recurring workflow's, by its id and owner).

A workflow file is YAML or JSON (YAML reads both)::

    owner: acme
    workflow_id: sales-2026-11          # optional; else derived from idempotency_key, or new
    idempotency_key: sales-2026-11      # optional: resubmitting the file is then a no-op
    steps:
      - name: aggregate
        type: data.process              # or job_type
        params: {input: sales.csv}
      - name: chart
        type: image.render
        depends_on: [aggregate]
      - name: report
        type: report.generate
        on_parent_failure: run          # cancel (default) or run
    edges:                              # optional: [parent, child] pairs, beside depends_on
      - [chart, report]
    schedule:                           # optional: a recurring workflow, a run each time
      expression: "0 3 * * *"           # (or just the expression, read in UTC)
      timezone: Europe/Paris
      misfire: RUN_ONCE                 # SKIP, RUN_ONCE (default) or RUN_ALL
      overlap: SKIP                     # SKIP (default): no run while the last one runs

Every step takes the fields of ``jobstream submit`` by their Python names (``priority``,
``run_at``, ``timeout_ms``, ``retry``, ``labels``, ...). ``submit`` checks the whole
workflow before connecting (exit 2 naming the field: ``steps.2.depends_on.0``, or the
cycle) and prints the workflow id, then one ``<step>\\t<job id>`` line per step (a
recurring workflow: its id only; ``--cron`` and ``--tz`` give it a schedule from the shell).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import typer
import yaml
from rich.console import Console

from jobstream._pipeline.clock import now_ms
from jobstream._pipeline.config import load_settings
from jobstream._pipeline.errors import ValidationError
from jobstream._pipeline.jobs.cli import ByOption, ReasonOption, refusals, requester, send_command
from jobstream._pipeline.jobs.client import JobClient
from jobstream._pipeline.model import commands
from jobstream._pipeline.serde import Event, encode_status
from jobstream._pipeline.status.query import EXIT_NOT_FOUND, TimeoutOption, read_statuses
from jobstream._pipeline.workflows import schedule_commands
from jobstream._pipeline.workflows.commands import workflow_event
from jobstream._pipeline.workflows.ids import schedule_job_id

workflow_app = typer.Typer(help="Submit and cancel workflows (DAGs of jobs); pause, resume, "
                           "trigger, update and show recurring ones.",
                           no_args_is_help=True)  # fmt: skip

_FILE_KEYS = frozenset({"owner", "workflow_id", "idempotency_key", "steps", "edges",
                        "schedule"})  # fmt: skip


def read_workflow_file(source: str) -> dict[str, Any]:
    """The workflow a file describes, ``-`` for stdin; ValidationError naming what is wrong."""
    try:
        text = sys.stdin.read() if source == "-" else Path(source).read_text()
    except OSError as exc:
        raise ValidationError("file", f"cannot read {source}: {exc.strerror or exc}") from None
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ValidationError("file", f"{source} is not YAML or JSON: {exc}") from None
    if not isinstance(document, Mapping):
        raise ValidationError("file", f"{source} must hold a mapping with owner and steps")
    unknown = sorted(set(document) - _FILE_KEYS)
    if unknown:
        raise ValidationError(
            unknown[0],
            "is not a workflow field (owner, workflow_id, idempotency_key, steps, edges, schedule)",
        )
    steps = document.get("steps")
    if not isinstance(steps, list):
        raise ValidationError("steps", "must be a list of steps")
    return {**document, "steps": with_edges(steps, document.get("edges") or [])}


def with_edges(steps: list[Any], edges: list[Any]) -> list[Any]:
    """The steps with ``type`` read as ``job_type`` and each edge added to its child."""
    named: dict[str, dict[str, Any]] = {}
    result = []
    for step in steps:
        if isinstance(step, Mapping):
            step = dict(step)
            if "type" in step:
                step["job_type"] = step.pop("type")
            step["depends_on"] = list(step.get("depends_on") or [])
            if isinstance(step.get("name"), str):
                named[step["name"]] = step
        result.append(step)
    for i, edge in enumerate(edges):
        if not (isinstance(edge, list) and len(edge) == 2):
            raise ValidationError(f"edges.{i}", "must be a [parent, child] pair")
        parent, child = edge
        if child not in named:
            raise ValidationError(f"edges.{i}.1", f"unknown step {child!r}")
        if parent not in named[child]["depends_on"]:
            named[child]["depends_on"].append(parent)
    return result


@workflow_app.command("submit")
def submit(
    file: str = typer.Argument(..., help="Workflow file, YAML or JSON; - for stdin."),
    owner: str | None = typer.Option(None, "--owner", help="Owner, if the file has none."),
    workflow_id: str | None = typer.Option(None, "--workflow-id", help="Overrides the file's."),
    idempotency_key: str | None = typer.Option(None, "--idempotency-key",
                                               help="Overrides the file's."),
    cron: str | None = typer.Option(None, "--cron", help="Recurring: a run on this 5-field "
                                    "cron expression (overrides the file's schedule)."),
    tz: str | None = typer.Option(None, "--tz", help="IANA zone --cron is read in (UTC)."),
) -> None:  # fmt: skip
    """Submit a workflow as one unit; print its id, then each step's job id."""
    with refusals():
        document = read_workflow_file(file)
        owner = owner or document.get("owner")
        if owner is None:
            raise ValidationError("owner", "is required (in the file or --owner)")
        if tz is not None and cron is None:
            raise ValidationError("schedule.timezone", "--tz needs --cron")
        schedule = document.get("schedule")
        if cron is not None:
            schedule = {"expression": cron, "timezone": tz or "UTC"}
        event = workflow_event(owner, document["steps"], now_ms=now_ms(),
                               workflow_id=workflow_id or document.get("workflow_id"),
                               idempotency_key=idempotency_key
                               or document.get("idempotency_key"), schedule=schedule)  # fmt: skip
    with JobClient(load_settings()) as client:
        submitted = client.submit_workflow(
            [dict(s) for s in document["steps"]], owner=owner, schedule=event.data.schedule,
            workflow_id=event.data.workflow_id, idempotency_key=event.data.idempotency_key,
        )  # fmt: skip
    typer.echo(submitted.workflow_id)
    for name, job_id in submitted.steps.items():
        typer.echo(f"{name}\t{job_id}")


@workflow_app.command("cancel")
def cancel(
    workflow_id: str = typer.Argument(..., help="The workflow id submit printed."),
    owner: str = typer.Option(..., "--owner", help="The workflow's owner (ids are per owner)."),
    reason: str | None = ReasonOption,
    by: str | None = ByOption,
) -> None:
    """Cancel every job of a workflow that has not ended; running jobs are stopped."""
    send_command(lambda: commands.cancel_workflow_event(owner, workflow_id, reason,
                                                        now_ms=now_ms(),
                                                        requested_by=requester(by)))  # fmt: skip


WorkflowIdArgument = typer.Argument(..., help="The recurring workflow's id.")
OwnerOption = typer.Option(..., "--owner", help="The workflow's owner (ids are per owner).")


@workflow_app.command("pause")
def pause(workflow_id: str = WorkflowIdArgument, owner: str = OwnerOption,
          reason: str | None = ReasonOption, by: str | None = ByOption) -> None:  # fmt: skip
    """Start no run of a recurring workflow until it is resumed (runs started go on)."""
    send_command(
        lambda: schedule_commands.pause_workflow_event(
            owner, workflow_id, now_ms=now_ms(), requested_by=requester(by), reason=reason
        )
    )


@workflow_app.command("resume")
def resume(workflow_id: str = WorkflowIdArgument, owner: str = OwnerOption,
           reason: str | None = ReasonOption, by: str | None = ByOption) -> None:  # fmt: skip
    """Let a paused recurring workflow run again, from its next time after now (the times
    missed while paused start no run)."""
    send_command(
        lambda: schedule_commands.resume_workflow_event(
            owner, workflow_id, now_ms=now_ms(), requested_by=requester(by), reason=reason
        )
    )


@workflow_app.command("trigger")
def trigger(workflow_id: str = WorkflowIdArgument, owner: str = OwnerOption,
            reason: str | None = ReasonOption, by: str | None = ByOption) -> None:  # fmt: skip
    """Start a run of a recurring workflow now; its schedule keeps its times."""
    send_command(
        lambda: schedule_commands.trigger_workflow_event(
            owner, workflow_id, now_ms=now_ms(), requested_by=requester(by), reason=reason
        )
    )


@workflow_app.command("update")
def update(
    workflow_id: str = WorkflowIdArgument,
    owner: str = OwnerOption,
    file: str | None = typer.Option(None, "--file", help="New steps: a workflow file's steps "
                                    "(and edges), YAML or JSON; - for stdin."),
    cron: str | None = typer.Option(None, "--cron", help="New 5-field cron expression."),
    tz: str | None = typer.Option(None, "--tz", help="IANA zone --cron is read in (UTC)."),
    reason: str | None = ReasonOption,
    by: str | None = ByOption,
) -> None:  # fmt: skip
    """Give a recurring workflow new steps (--file) and/or a new schedule (--cron, --tz),
    for the runs that start after it. A bad step exits 2 naming it (steps.<i>.<field>)."""

    def build() -> Event:
        if tz is not None and cron is None:
            raise ValidationError("cron.timezone", "--tz needs --cron")
        steps = None if file is None else read_workflow_file(file)["steps"]
        schedule = None if cron is None else {"expression": cron, "timezone": tz or "UTC"}
        return schedule_commands.update_workflow_event(
            owner, workflow_id, cron=schedule, steps=steps, now_ms=now_ms(),
            requested_by=requester(by), reason=reason)  # fmt: skip

    send_command(build)


@workflow_app.command("status")
def status(workflow_id: str = WorkflowIdArgument, owner: str = OwnerOption,
           timeout_ms: int = TimeoutOption) -> None:  # fmt: skip
    """Show a recurring workflow's own status (JSON, from jobs.status): SCHEDULED, PAUSED or
    CANCELLED, its next run (next_fire_at_ms), runs so far, its last run (result)."""
    job_id = schedule_job_id(owner, workflow_id)
    statuses = read_statuses(load_settings(), job_id=job_id, timeout_s=timeout_ms / 1000)
    if job_id not in statuses:
        typer.echo(f"error: no status for {owner}'s recurring workflow {workflow_id}", err=True)
        raise typer.Exit(EXIT_NOT_FOUND)
    Console().print_json(encode_status(statuses[job_id]).decode())
