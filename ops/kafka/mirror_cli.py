"""``jobstream kafka mirror up|down|status``: MirrorMaker 2 keeping a standby cluster
(ops/kafka/mirror.py; docs/operations.md, "A standby cluster")."""

from __future__ import annotations

import os
from pathlib import Path

import typer
from confluent_kafka import KafkaException
from rich.console import Console
from rich.table import Table

from jobstream._ops.kafka.mirror import (
    Flow,
    Mirror,
    healthy,
    offsets_not_synced,
    records_behind,
    rewind_group,
    task_states,
    timers_inputs,
)
from jobstream._pipeline.durations import duration_option
from jobstream._pipeline.errors import BrokerError

console = Console()
EPILOG = """Examples:

  jobstream kafka mirror up --source 10.0.1.5:9092 --target 10.8.1.5:9092

  jobstream kafka mirror status

  jobstream kafka mirror up --source 10.8.1.5:9092 --source-alias standby \\
      --target 10.0.1.5:9092 --target-alias primary      # failing back
"""
mirror_app = typer.Typer(
    help="Keep a standby cluster with MirrorMaker 2: jobstream's topics, under the same "
    "names, and its groups' offsets.", no_args_is_help=True,
)  # fmt: skip
MirrorHomeOption = typer.Option(
    Path(os.environ.get("JOBSTREAM_MIRROR_HOME", ".jobstream/mirror")), "--home",
    help="Folder of the MirrorMaker's configuration, pid and logs (env JOBSTREAM_MIRROR_HOME).",
)  # fmt: skip


@mirror_app.command("up", epilog=EPILOG)
def mirror_up(
    source: str = typer.Option(..., "--source", help="The source cluster's bootstrap servers."),
    target: str = typer.Option(..., "--target", help="The standby's bootstrap servers."),
    source_alias: str = typer.Option("primary", "--source-alias",
                                     help="The source's name in MM2's internal topics."),
    target_alias: str = typer.Option("standby", "--target-alias",
                                     help="The target's name in MM2's internal topics."),
    prefix: str = typer.Option(os.environ.get("JOBSTREAM_TOPIC_PREFIX", ""), "--prefix",
                               help="The deployment's topic prefix (JOBSTREAM_TOPIC_PREFIX)."),
    replication: int = typer.Option(1, "--replication", min=1,
                                    help="Replicas of the topics MM2 creates on the target."),
    heap_mb: int = typer.Option(256, "--heap-mb", min=64, help="The MirrorMaker's JVM heap."),
    timeout_ms: int = duration_option("90s", "--timeout",
                                      help="How long to wait for it to be healthy."),
    home: Path = MirrorHomeOption,
) -> None:  # fmt: skip
    """Start MirrorMaker 2 (dedicated mode) from --source to --target and wait until its
    connectors run. Idempotent for the same flow."""
    try:
        flow = Flow.of_deployment(prefix, source=source_alias, source_bootstrap=source,
                                  target=target_alias, target_bootstrap=target,
                                  replication=replication, heap_mb=heap_mb)  # fmt: skip
        mirror = Mirror(home)
        with console.status(f"starting MirrorMaker {source_alias} -> {target_alias} ..."):
            pid = mirror.up(flow, timeout_s=timeout_ms / 1000)
    except BrokerError as exc:
        console.print(f"[red]{exc}[/red]", soft_wrap=True)
        raise typer.Exit(1) from None
    console.print(f"mirroring {flow.topics} and groups {flow.groups}: {source_alias} "
                  f"({source}) -> {target_alias} ({target}), pid {pid}", soft_wrap=True)
    console.print(f"log: {mirror.log_path}", soft_wrap=True)


@mirror_app.command("down")
def mirror_down(home: Path = MirrorHomeOption) -> None:
    """Stop the MirrorMaker."""
    pid = Mirror(home).down()
    console.print(f"stopped MirrorMaker pid {pid}" if pid else "no MirrorMaker was running")


@mirror_app.command("status")
def mirror_status(home: Path = MirrorHomeOption) -> None:
    """Show the flow, its connectors' and tasks' states and the records not copied yet
    per topic. Exits 1 when it does not run or is not healthy."""
    mirror = Mirror(home)
    flow = mirror.flow()
    if flow is None:
        console.print(f"no flow in {mirror.home}")
        raise typer.Exit(1)
    pid = mirror.pid()
    console.print(f"{flow.source} ({flow.source_bootstrap}) -> {flow.target} "
                  f"({flow.target_bootstrap}): " + (f"pid {pid}" if pid else "[red]stopped[/red]"))
    states = task_states(flow)
    for name, state in sorted(states.items()):
        console.print(f"  {name}: {state}")
    table = Table("topic", "partitions", "records not copied")
    totals: dict[str, tuple[int, int]] = {}
    try:
        for (topic, _), behind in records_behind(flow).items():
            count, sum_ = totals.get(topic, (0, 0))
            totals[topic] = (count + 1, sum_ + behind)
        short = offsets_not_synced(flow)
        console.print(f"group offsets read to the end on the source and not yet copied: "
                      f"{len(short)}" + (f" ({', '.join(short[:5])} ...)" if short else ""),
                      soft_wrap=True)  # fmt: skip
    except (BrokerError, KafkaException) as exc:
        console.print(f"[red]the source does not answer: {exc}[/red]")
    for topic, (count, behind) in totals.items():
        table.add_row(topic, str(count), str(behind))
    console.print(table)
    if pid is None or not healthy(states):
        raise typer.Exit(1)


@mirror_app.command("promote")
def mirror_promote(
    target: str = typer.Option(..., "--target", help="The standby's bootstrap servers."),
    prefix: str = typer.Option(os.environ.get("JOBSTREAM_TOPIC_PREFIX", ""), "--prefix",
                               help="The deployment's topic prefix (JOBSTREAM_TOPIC_PREFIX)."),
    lost_ago_ms: int = duration_option("0s", "--lost-ago",
                                       help="How long ago the primary was lost."),
    rewind_ms: int = duration_option("30s", "--rewind", help="How far before the loss the "
                                     "timers read jobs.intake again."),
    distrust_ms: int = duration_option("15s", "--distrust", help="How far before the loss "
                                       "the timers' markers of fired jobs are not trusted."),
) -> None:  # fmt: skip
    """Prepare the standby to take over, before its pipeline starts: move the timers'
    group on what it reads (jobs.intake, jobs.retry, owners' intake topics) back to
    --rewind before the loss, and print the setting that
    makes the timers fire again a job fired in the last --distrust before it (its
    execution may not have been copied: ADR 0012). Jobs fired twice are reported as
    DUPLICATE; none is lost that reached the standby."""
    from jobstream._pipeline.clock import now_ms

    lost_ms = now_ms() - lost_ago_ms
    group = f"{prefix}jobstream.timers"
    try:
        inputs = timers_inputs(target, prefix)
        moved = rewind_group(target, group, inputs, lost_ms - rewind_ms)
    except (BrokerError, KafkaException) as exc:
        console.print(f"[red]the timers' group on {target} could not be moved: {exc}[/red]",
                      soft_wrap=True)  # fmt: skip
        raise typer.Exit(1) from None
    console.print(f"{group}: {moved} partitions of {', '.join(inputs)} moved back "
                  f"{rewind_ms / 1000:g} s before the loss", soft_wrap=True)  # fmt: skip
    print(f"export JOBSTREAM_MARKERS_TRUSTED_BEFORE={lost_ms - distrust_ms}")
    print(f"export JOBSTREAM_MARKERS_TRUSTED_FROM={now_ms()}")
