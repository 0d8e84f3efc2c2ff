"""``jobstream kafka owners ...`` and ``jobstream kafka quotas ...``: tenants at the Kafka
door (docs/kafka-security.md, "Owners and quotas")."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console

from jobstream._ops.cli import HomeOption
from jobstream._ops.kafka.cluster import LocalCluster
from jobstream._ops.kafka.owners import add_owner, owners
from jobstream._ops.kafka.quotas import (
    ClientQuota,
    clear_quota,
    read_changes,
    read_quotas,
    set_quota,
)
from jobstream._pipeline.cli_options import JsonLinesOption, echo_each
from jobstream._pipeline.config import load_settings
from jobstream._pipeline.jobs.cli import changed_by, refusals
from jobstream._pipeline.tenancy import owner_principal
from jobstream._pipeline.topics import Topics

console = Console()

owners_app = typer.Typer(
    help="Owners with a Kafka door of their own: an intake topic only their principal may "
    "write, whose records the timers pass on only when they name that owner.",
    epilog="""Examples:

  jobstream kafka owners add acme --users

  eval "$(jobstream kafka env jobstream-owner-acme)"; export JOBSTREAM_INTAKE_OWNER=acme

  jobstream kafka owners list
""",
    no_args_is_help=True,
)
quotas_app = typer.Typer(
    help="Kafka's client quotas: the bytes a second a principal may produce and fetch, "
    "enforced by the broker (it delays a principal past them).",
    epilog="""Examples:

  jobstream kafka quotas set --principal jobstream-owner-acme --produce-bytes-per-s 1048576

  jobstream kafka quotas set --principal jobstream-api --produce-bytes-per-s 10485760 \\
      --fetch-bytes-per-s 20971520 --by ops-oncall

  jobstream kafka quotas show --json
""",
    no_args_is_help=True,
)

ByOption = typer.Option(None, "--by", help="Who makes the change, recorded with it "
                        "(default: the shell's user@host).")  # fmt: skip


@owners_app.command("add")
def owners_add(
    owner: str = typer.Argument(..., help="The owner (letters, digits, '_', '-')."),
    users: bool = typer.Option(
        False, "--users",
        help="Also give its principal (jobstream-owner-<owner>) a SCRAM-SHA-512 password, "
        "kept in the local cluster's folder (--home); `jobstream kafka env` prints it.",
    ),
    home: Path = HomeOption,
) -> None:
    """Make OWNER's intake topic (jobs.intake.owner.<owner>) and grant its principal WRITE
    on it and nothing else. Runs as a principal allowed to create topics and alter ACLs."""
    settings = load_settings()
    with refusals():
        password = None
        if users:
            password = LocalCluster(home).security.password(owner_principal(owner))
        role = add_owner(settings.kafka_config, Topics(settings), owner, password=password)
    console.print(f"{role.user}: may write {Topics(settings).owner_intake(owner)} only, "
                  f"as owner {owner!r}", soft_wrap=True)  # fmt: skip


@owners_app.command("list")
def owners_list(as_json: bool = JsonLinesOption) -> None:
    """The owners that have an intake topic of their own."""
    settings = load_settings()
    topics = Topics(settings)
    echo_each(owners(settings.kafka_config, topics), as_json, text=str,
              fields=lambda owner: {"owner": owner, "topic": topics.owner_intake(owner)})


@quotas_app.command("set")
def quotas_set(
    principal: str = typer.Option(..., "--principal", help="The SCRAM user, e.g. "
                                  "jobstream-owner-acme (without 'User:')."),
    produce: int | None = typer.Option(None, "--produce-bytes-per-s", min=1,
                                       help="Bytes a second it may produce (per broker)."),
    fetch: int | None = typer.Option(None, "--fetch-bytes-per-s", min=1,
                                     help="Bytes a second it may fetch (per broker)."),
    by: str | None = ByOption,
) -> None:
    """Bound what PRINCIPAL produces and fetches (a rate not given stays as it was). The
    quota and who set it are recorded on jobs.client-quotas."""
    if produce is None and fetch is None:
        raise typer.BadParameter("give --produce-bytes-per-s, --fetch-bytes-per-s or both")
    settings = load_settings()
    with refusals():
        change = set_quota(settings, ClientQuota(principal, produce, fetch),
                           set_by=changed_by(by, settings))  # fmt: skip
    console.print(f"{_described(change.quota)} (set by {change.set_by})", soft_wrap=True)


@quotas_app.command("clear")
def quotas_clear(principal: str = typer.Option(..., "--principal"),
                 by: str | None = ByOption) -> None:  # fmt: skip
    """Remove PRINCIPAL's quotas (recorded, with who did it)."""
    settings = load_settings()
    with refusals():
        change = clear_quota(settings, principal, set_by=changed_by(by, settings))
    console.print(f"{principal}: cleared (by {change.set_by})", soft_wrap=True)


@quotas_app.command("show")
def quotas_show(
    principal: str | None = typer.Option(None, "--principal", help="One principal only."),
    as_json: bool = JsonLinesOption,
) -> None:
    """The quotas the broker enforces, each with who set it last (jobs.client-quotas)."""
    settings = load_settings()
    with refusals():
        quotas = read_quotas(settings, principal)
        changes = read_changes(settings)

    def fields(quota: ClientQuota) -> dict[str, object]:
        change = changes.get(quota.principal)
        return {"principal": quota.principal, "produce_bytes_per_s": quota.produce_bytes_per_s,
                "fetch_bytes_per_s": quota.fetch_bytes_per_s,
                "set_by": change.set_by if change else None,
                "set_at_ms": change.at_ms if change else None}  # fmt: skip

    echo_each(quotas, as_json, fields=fields, text=lambda quota: f"{_described(quota)}" + (
        f" (set by {changes[quota.principal].set_by})" if quota.principal in changes else ""))


def _described(quota: ClientQuota) -> str:
    def rate(value: int | None) -> str:
        return "unbounded" if value is None else f"{value:,} B/s"

    return (f"{quota.principal}: produce {rate(quota.produce_bytes_per_s)}, "
            f"fetch {rate(quota.fetch_bytes_per_s)}")  # fmt: skip
