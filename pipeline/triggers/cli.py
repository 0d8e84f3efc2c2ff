"""``jobstream triggers add|list|show|remove`` and ``jobstream trigger-processor``."""

from __future__ import annotations

import orjson
import typer

from jobstream._pipeline.cli_options import (
    InstanceIdOption,
    JsonLinesOption,
    MetricsPortOption,
    echo_each,
    run_processor,
)
from jobstream._pipeline.config import load_settings
from jobstream._pipeline.errors import ValidationError
from jobstream._pipeline.triggers.model import Trigger
from jobstream._pipeline.triggers.processor import TRIGGER_OPTIONS, trigger_runner
from jobstream._pipeline.triggers.template import JobTemplate
from jobstream._pipeline.triggers.topic import (
    define_trigger,
    find_trigger,
    read_triggers,
    remove_trigger,
)

EPILOG = """Examples:

  jobstream triggers add orders-paid --owner shop --source orders --type order.ship
      --filter 'value.status == "paid" && value.total > 100' --param order=value.id
      --param customer=key

  jobstream triggers add files-landed --owner etl --source uploads --format raw
      --type file.ingest --param path=value

  jobstream triggers list --json

  jobstream triggers remove orders-paid --owner shop
"""

triggers_app = typer.Typer(
    help="Event triggers: a job per matching record of any Kafka topic; a change applies in "
    "every trigger processor within a second, with no restart.",
    epilog=EPILOG,
    no_args_is_help=True,
)

OwnerOption = typer.Option(..., "--owner", help="Whose trigger it is (and whose jobs it submits).")


def _pairs(items: list[str], option: str) -> dict[str, str]:
    pairs = {}
    for item in items:
        name, separator, path = item.partition("=")
        if not separator or not name:
            raise ValidationError(option.lstrip("-"), f"must be NAME=VALUE, got {item!r}")
        pairs[name] = path
    return pairs


@triggers_app.command("add")
def add_command(
    name: str = typer.Argument(..., help="The trigger's name, unique per owner."),
    owner: str = OwnerOption,
    source: str = typer.Option(..., "--source", help="The topic whose records start jobs."),
    job_type: str = typer.Option(..., "--type", help="The job type each match submits."),
    fmt: str = typer.Option("json", "--format", help="json, avro (Confluent wire format, "
                            "JOBSTREAM_SCHEMA_REGISTRY_URL) or raw (UTF-8 text)."),
    filter_: str | None = typer.Option(None, "--filter", help="A CEL expression over key, "
                                       "headers and value; none: every record."),
    params: list[str] = typer.Option([], "--param", help="NAME=PATH: a parameter taken from "
                                     "the record (value.a.b, key, headers.h, offset, ...)."),
    pass_value: bool = typer.Option(False, "--pass-value", help="The value (a JSON object) "
                                    "is the parameters; --param sets more over it."),
    priority: str = typer.Option("NORMAL", "--priority", help="HIGH, NORMAL or LOW."),
    labels: list[str] = typer.Option([], "--label", help="NAME=VALUE, on every job."),
    keys: str | None = typer.Option(None, "--keys", help="The jobs' keys as JSON "
                                    "(concurrency, rate, debounce, singleton)."),
    description: str = typer.Option("", "--description"),
) -> None:  # fmt: skip
    """Define (or replace) a trigger."""
    try:
        parsed_keys = orjson.loads(keys) if keys else {}
    except orjson.JSONDecodeError as exc:
        raise ValidationError("keys", f"is not JSON: {exc}") from None
    trigger = Trigger(
        name=name, owner=owner, source=source, format=fmt,  # type: ignore[arg-type]
        filter=filter_, description=description,
        job=JobTemplate(job_type=job_type, params=_pairs(params, "--param"),
                        pass_value=pass_value, priority=priority,
                        labels=_pairs(labels, "--label"), keys=parsed_keys),
    )  # fmt: skip
    define_trigger(load_settings(), trigger)
    typer.echo(f"{trigger.label}: {trigger.source} -> {trigger.job.job_type}")


@triggers_app.command("list")
def list_command(owner: str | None = typer.Option(None, "--owner"),
                 as_json: bool = JsonLinesOption) -> None:  # fmt: skip
    """The triggers in force."""
    echo_each(read_triggers(load_settings(), owner), as_json, text=_described,
              fields=Trigger.to_json)  # fmt: skip


@triggers_app.command("show")
def show_command(name: str, owner: str = OwnerOption) -> None:
    """One trigger, as JSON."""
    trigger = find_trigger(load_settings(), owner, name)
    if trigger is None:
        typer.echo(f"no trigger {owner}/{name}", err=True)
        raise typer.Exit(1)
    typer.echo(orjson.dumps(trigger.to_json(), option=orjson.OPT_INDENT_2).decode())


@triggers_app.command("remove")
def remove_command(name: str, owner: str = OwnerOption) -> None:
    """Remove a trigger: its source's records start no more jobs."""
    remove_trigger(load_settings(), owner, name)
    typer.echo(f"{owner}/{name}: removed")


def _described(trigger: Trigger) -> str:
    where = f" if {trigger.filter}" if trigger.filter else ""
    return f"{trigger.label}: {trigger.source} ({trigger.format}){where} -> {trigger.job.job_type}"


def trigger_processor(
    instance_id: str = InstanceIdOption,
    metrics_port: int = MetricsPortOption,
) -> None:  # fmt: skip
    """Run a trigger processor: submit a job per matching record of every trigger's source."""
    options = TRIGGER_OPTIONS.evolve(instance_id=instance_id)
    run_processor(lambda settings: trigger_runner(settings, options), metrics_port)
