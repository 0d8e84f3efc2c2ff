"""``jobstream quotas set|clear|list``: the owners' quotas on jobs.quotas."""

from __future__ import annotations

import typer

from jobstream._pipeline.cli_options import JsonLinesOption, echo_each
from jobstream._pipeline.config import load_settings
from jobstream._pipeline.jobs.cli import SetByOption, changed_by
from jobstream._pipeline.limits.model import parse_rate
from jobstream._pipeline.quotas.model import Quota
from jobstream._pipeline.quotas.topic import clear_quota, read_quotas_set_by, set_quota

EPILOG = """Examples:

  jobstream quotas set --owner acme --submit-rate 200/s --pending-jobs 50000

  jobstream quotas set --owner acme --job-types 100 --streams 5

  jobstream quotas clear --owner acme

  jobstream quotas list --json
"""

quotas_app = typer.Typer(
    help="Quotas of an owner over the HTTP API (job types, submissions per second per "
    "token, pending jobs, live streams per token); a change applies in every API process "
    "within a second, with no restart. Quotas not set take the API's defaults "
    "(JOBSTREAM_QUOTA_*).",
    epilog=EPILOG,
    no_args_is_help=True,
)

OwnerOption = typer.Option(..., "--owner", help="The owner the quotas apply to.")


@quotas_app.command("set")
def set_command(
    owner: str = OwnerOption,
    job_types: int | None = typer.Option(None, "--job-types", help="Most job types."),
    submit_rate: str | None = typer.Option(
        None, "--submit-rate", help="Jobs submitted per s, m or h, per token: 200/s."),
    submit_burst: int | None = typer.Option(
        None, "--submit-burst", help="Jobs one token may submit at once after a quiet spell."),
    pending_jobs: int | None = typer.Option(
        None, "--pending-jobs", help="Most jobs not ended."),
    streams: int | None = typer.Option(
        None, "--streams", help="Most live streams open per token."),
    by: str | None = SetByOption,
) -> None:  # fmt: skip
    """Set (replace) an owner's quotas: those not given take the defaults."""
    rate = None if submit_rate is None else parse_rate(submit_rate)
    quota = Quota(job_types=job_types, submit_rate=rate, submit_burst=submit_burst,
                  pending_jobs=pending_jobs, streams=streams)  # fmt: skip
    settings = load_settings()
    set_quota(settings, owner, quota, set_by=changed_by(by, settings))
    typer.echo(describe(owner, quota))


@quotas_app.command("clear")
def clear_command(owner: str = OwnerOption, by: str | None = SetByOption) -> None:
    """Remove an owner's override: the defaults apply to it again."""
    settings = load_settings()
    clear_quota(settings, owner, set_by=changed_by(by, settings))
    typer.echo(f"owner={owner}: cleared")


@quotas_app.command("list")
def list_command(as_json: bool = JsonLinesOption) -> None:
    """The owners' overrides in force (the defaults are the API's settings), each with
    who set it."""
    echo_each(read_quotas_set_by(load_settings()).items(), as_json,
              text=lambda item: describe(item[0], item[1][0]) + (
                  f" (set by {item[1][1]})" if item[1][1] else ""),
              fields=lambda item: {"owner": item[0], **item[1][0].set_fields(),
                                   "set_by": item[1][1]})  # fmt: skip


def describe(owner: str, quota: Quota) -> str:
    shown = ", ".join(f"{name} {value:g}" if isinstance(value, float) else f"{name} {value}"
                      for name, value in quota.set_fields().items())  # fmt: skip
    return f"owner={owner}: {shown}"
