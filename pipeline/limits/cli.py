"""``jobstream limits set|clear|list``: the rate limits on jobs.limits."""

from __future__ import annotations

import typer

from jobstream._pipeline.cli_options import JsonLinesOption, echo_each
from jobstream._pipeline.config import load_settings
from jobstream._pipeline.jobs.cli import SetByOption, changed_by
from jobstream._pipeline.limits.model import Limit, LimitKey, parse_rate
from jobstream._pipeline.limits.topic import clear_limit, read_limits_set_by, set_limit

EPILOG = """Examples:

  jobstream limits set --type image.render --rate 50/s

  jobstream limits set --owner acme --rate 600/m --burst 20

  jobstream limits set --owner acme --type report.generate --rate 2/s

  jobstream limits clear --type image.render

  jobstream limits list --json
"""

limits_app = typer.Typer(
    help="Rate limits on firing, per job type, per owner, or per owner and type; a change "
    "applies in every timer process within a second, with no restart.",
    epilog=EPILOG,
    no_args_is_help=True,
)

TypeOption = typer.Option(None, "--type", help="Job type the limit applies to.")
OwnerOption = typer.Option(None, "--owner", help="Owner the limit applies to.")


@limits_app.command("set")
def set_command(
    job_type: str | None = TypeOption,
    owner: str | None = OwnerOption,
    rate: str = typer.Option(..., "--rate", help="Firings per s, m or h: 50/s, 600/m."),
    burst: int | None = typer.Option(
        None, "--burst", help="Firings that may go out at once (default: 0.5 s of the rate, "
        "at least 1).",
    ),
    by: str | None = SetByOption,
) -> None:  # fmt: skip
    """Set (or replace) the limit of a type, an owner, or an owner's jobs of a type."""
    limit = Limit.of(LimitKey(owner=owner, job_type=job_type), parse_rate(rate), burst)
    settings = load_settings()
    set_limit(settings, limit, set_by=changed_by(by, settings))
    typer.echo(_described(limit))


@limits_app.command("clear")
def clear_command(job_type: str | None = TypeOption, owner: str | None = OwnerOption,
                  by: str | None = SetByOption) -> None:  # fmt: skip
    """Remove a limit: the jobs it holds back fire at once (as the batch size allows)."""
    key = LimitKey(owner=owner, job_type=job_type)
    settings = load_settings()
    clear_limit(settings, key, set_by=changed_by(by, settings))
    typer.echo(f"{key}: cleared")


@limits_app.command("list")
def list_command(as_json: bool = JsonLinesOption) -> None:
    """The limits in force, each with who set it."""
    echo_each(read_limits_set_by(load_settings()), as_json,
              text=lambda found: _described(found[0]) + (f" (set by {found[1]})" if found[1]
                                                         else ""),
              fields=lambda found: {
        "owner": found[0].key.owner, "job_type": found[0].key.job_type,
        "rate_per_s": found[0].rate, "burst": found[0].burst, "set_by": found[1]})  # fmt: skip


def _described(limit: Limit) -> str:
    return f"{limit.key}: {limit.rate:g}/s, burst {limit.burst}"
