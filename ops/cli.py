"""``jobstream kafka ...`` and ``jobstream topics ...``: the local broker and the topics."""

from __future__ import annotations

import os
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from jobstream._ops.kafka.cluster import LocalCluster
from jobstream._ops.kafka.mirror_cli import mirror_app
from jobstream._ops.kafka.warmup import WARM_UP_S, warm_up
from jobstream._pipeline.config import load_settings
from jobstream._pipeline.durations import duration_option
from jobstream._pipeline.kafka.admin import ensure_topics
from jobstream._pipeline.topics import Topics

console = Console()
kafka_app = typer.Typer(
    help="Run a local Apache Kafka broker (KRaft) from Maven Central jars.", no_args_is_help=True
)
kafka_app.add_typer(mirror_app, name="mirror")
topics_app = typer.Typer(help="Create and check jobstream's topics.", no_args_is_help=True)

DEFAULT_HOME = Path(os.environ.get("JOBSTREAM_KAFKA_HOME", ".jobstream/kafka"))
HomeOption = typer.Option(
    DEFAULT_HOME, "--home", help="Folder of the cluster's data and logs (env JOBSTREAM_KAFKA_HOME)."
)
StackHomeOption = typer.Option(
    Path(".jobstream"), "--home", help="Folder of the processes' logs and state."
)
BasePortOption = typer.Option(9400, "--base-port", help="First /healthz port.")
ReadyTimeoutOption = duration_option("90s", "--timeout", help="How long to wait for the broker.")


@kafka_app.command("up")
def kafka_up(
    nodes: int = typer.Option(1, "--nodes", min=1, max=5, help="1, or 3 for a fault-test cluster."),
    port: int = typer.Option(9092, "--port", help="First broker port; controllers at port+100."),
    heap_mb: int = typer.Option(512, "--heap-mb", help="JVM heap of each node."),
    timeout_ms: int = ReadyTimeoutOption,
    warm_up_ms: int = duration_option(
        f"{WARM_UP_S:g}s",
        "--warm-up",
        envvar="JOBSTREAM_KAFKA_WARM_UP",
        help="Transactional traffic through a node just started, so its JIT has compiled "
        "the request paths before the pipeline needs them (0s: none).",
    ),
    home: Path = HomeOption,
    secure: bool = typer.Option(
        False, "--secure",
        help="TLS, SASL/SCRAM-SHA-512 and ACLs (docs/kafka-security.md); then "
        "`jobstream kafka acls --users` gives each role its principal.",
    ),
) -> None:
    """Start the broker (idempotent), wait until it answers a metadata request, and warm
    up a broker it started."""
    cluster = LocalCluster(home)
    layout = cluster.layout()
    was_running = layout is not None and bool(cluster.running_nodes(layout))
    with console.status(f"starting {nodes}-node Kafka in {cluster.home} ..."):
        layout = cluster.up(nodes=nodes, port=port, heap_mb=heap_mb,
                             timeout_s=timeout_ms / 1000, secure=secure)  # fmt: skip
    if not was_running and warm_up_ms:
        with console.status("warming up the broker ...") as status:
            done = warm_up(layout.bootstrap, seconds=warm_up_ms / 1000,
                           replication=layout.replication,
                           client_config=cluster.client_config(layout),
                           on_progress=lambda f: status.update(
                               f"warming up the broker ... {f:.0%}"))  # fmt: skip
        console.print(f"warmed up: {done.records:,} records in {done.transactions:,} "
                      f"transactions, {done.seconds:.1f} s"
                      + (f" (stopped early: {done.error})" if done.error else ""))  # fmt: skip
    console.print(f"bootstrap: [bold]{layout.bootstrap}[/bold]")
    if layout.secure:
        console.print(f"secured: SASL_SSL, SCRAM-SHA-512, CA {cluster.security.tls().ca}; "
                      "the super user's settings: eval \"$(jobstream kafka env admin)\"",
                      soft_wrap=True)  # fmt: skip
    for node in layout.nodes:  # a path on one line, whatever the terminal's width
        console.print(f"log (node {node.node_id}): {cluster.log_path(node)}", soft_wrap=True)


@kafka_app.command("down")
def kafka_down(home: Path = HomeOption) -> None:
    """Stop every node of the local broker."""
    stopped = LocalCluster(home).down()
    console.print(f"stopped nodes: {stopped}" if stopped else "no broker was running")


@kafka_app.command("status")
def kafka_status(home: Path = HomeOption) -> None:
    """Show each node: pid, port, and whether it runs. Exits 1 when none runs."""
    cluster = LocalCluster(home)
    layout = cluster.layout()
    if layout is None:
        console.print(f"no cluster in {cluster.home}")
        raise typer.Exit(1)
    table = Table("node", "state", "pid", "bootstrap", "log")
    for node in layout.nodes:
        pid = cluster.pid(node)
        state = "[green]running[/green]" if pid else "[red]stopped[/red]"
        table.add_row(
            str(node.node_id),
            state,
            str(pid or "-"),
            f"127.0.0.1:{node.port}",
            str(cluster.log_path(node)),
        )
    console.print(table)
    if not cluster.running_nodes(layout):
        raise typer.Exit(1)


@kafka_app.command("acls")
def kafka_acls(
    users: bool = typer.Option(
        False, "--users",
        help="Also give each role's principal its SCRAM-SHA-512 password, kept in the local "
        "cluster's folder (--home); `jobstream kafka env ROLE` prints them as settings.",
    ),
    home: Path = HomeOption,
) -> None:
    """Grant each role the least it needs (ops/kafka/acls.py): timers, status processor,
    retry router, a worker per job type (JOBSTREAM_JOB_TYPES), API, client, console.

    Runs as the principal of the settings (JOBSTREAM_SASL_*), which must be allowed to
    alter ACLs: on the local cluster, `eval "$(jobstream kafka env admin)"` first."""
    from jobstream._ops.kafka.principals import apply_acls, every_role, upsert_users

    settings = load_settings()
    roles = every_role(settings.job_types)
    if users:
        security = LocalCluster(home).security
        upsert_users(settings.kafka_config, {r.user: security.password(r.user) for r in roles})
        console.print(f"users: {', '.join(r.user for r in roles)}")
    count = apply_acls(settings.kafka_config, Topics(settings), roles)
    console.print(f"granted {count} ACLs to {len(roles)} principals")


@kafka_app.command("env")
def kafka_env(
    user: str = typer.Argument(..., help="admin, or a role's principal (jobstream-console, "
                               "jobstream-worker-<type>, ...)"),
    home: Path = HomeOption,
    java: bool = typer.Option(False, "--java", help="A Java client's properties file instead "
                              "(for Kafka's console tools' --consumer.config)."),
) -> None:
    """Print the settings of a process that logs in to the local secured cluster as
    ``user``, as shell exports: eval "$(jobstream kafka env jobstream-console)"; with
    --java, as a Java client's properties."""
    import shlex

    cluster = LocalCluster(home)
    layout = cluster.layout()
    if layout is None or not layout.secure:
        console.print(f"no secured cluster in {cluster.home}; run `jobstream kafka up --secure`")
        raise typer.Exit(1)
    if user != "admin" and user not in cluster.security.passwords():
        console.print(f"no user {user!r} in {cluster.home}; run `jobstream kafka acls --users`")
        raise typer.Exit(1)
    if java:
        print(cluster.security.java_properties(user), end="")
        return
    env = {"JOBSTREAM_BOOTSTRAP_SERVERS": layout.bootstrap,
           **cluster.security.settings_env(user)}  # fmt: skip
    for key, value in env.items():
        print(f"export {key}={shlex.quote(value)}")


@kafka_app.command("jars")
def kafka_jars() -> None:
    """Fetch the broker's jars (and Kafka's tools) with Maven into the cache (done by `up`
    when needed); print their folder on stdout: java -cp "$(jobstream kafka jars)/*" ..."""
    from jobstream._ops.kafka import jars

    with console.status("fetching Kafka jars with Maven ..."):
        path = jars.ensure_jars()
    print(path)


@topics_app.command("create")
def topics_create() -> None:
    """Create every topic of the design; fail naming any existing topic that differs."""
    settings = load_settings()
    report = ensure_topics(
        settings.kafka_config,
        Topics(settings).specs(),
        replication_factor=settings.replication_factor,
        min_insync_replicas=settings.min_insync_replicas,
    )
    console.print(f"created {len(report.created)} topics, {len(report.existing)} already existed")
    for name in report.created:
        console.print(f"  + {name}")


@topics_app.command("grow")
def topics_grow(
    partitions: int | None = typer.Option(
        None, "--partitions", min=1, help="The timers' new partition count (more than now)."),
    exec_partitions: int | None = typer.Option(
        None, "--exec-partitions", min=1,
        help="The execution topics' new partition count (at least what they have)."),
    job_types: list[str] = typer.Option(
        [], "--type", help="A job type whose execution topics grow (repeat it; default: "
        "every type of JOBSTREAM_JOB_TYPES)."),
    events_partitions: int | None = typer.Option(
        None, "--events-partitions", min=1,
        help="jobs.events' new partition count (more than now; with the status processor's "
        "changelog and handover topic)."),
    timeout_ms: int = duration_option("30s", "--timeout", help="How long each step may take."),
) -> None:
    """Raise partition counts on a running system: the timers' (jobs.intake, jobs.retry and
    their changelog; the timers hand each pending job to its new partition's store) with
    --partitions, job types' execution topics (every priority tier and pool) with
    --exec-partitions, jobs.events (the status processors hand each job to its new
    partition's store) with --events-partitions (docs/scaling.md, "Growing the partitions").
    Run it again to finish a grow that stopped."""
    from jobstream._pipeline.errors import ValidationError
    from jobstream._pipeline.status.grow import grow_events_topics
    from jobstream._pipeline.timers.grow import grow_timer_topics
    from jobstream._pipeline.worker.grow import grow_execution_topics

    if partitions is None and exec_partitions is None and events_partitions is None:
        raise ValidationError("--partitions", "give --partitions (the timers' topics), "
                              "--exec-partitions (the execution topics) or "
                              "--events-partitions (jobs.events), or more")  # fmt: skip
    if job_types and exec_partitions is None:
        raise ValidationError("--type", "names the types whose execution topics grow: give "
                              "--exec-partitions too")  # fmt: skip
    settings = load_settings()
    if partitions is not None:
        plan = grow_timer_topics(settings, partitions, timeout_s=timeout_ms / 1000)
        if plan.nothing_to_do:
            console.print(f"the timers' topics have {partitions} partitions already")
        else:
            console.print(f"the timers' topics grew from {plan.old} to {partitions} partitions; "
                          f"set JOBSTREAM_TIMER_PARTITIONS={partitions} where they are "
                          "configured")  # fmt: skip
    if events_partitions is not None:
        grown_events = grow_events_topics(settings, events_partitions,
                                          timeout_s=timeout_ms / 1000)  # fmt: skip
        if grown_events.nothing_to_do:
            console.print(f"jobs.events has {events_partitions} partitions already")
        else:
            console.print(f"jobs.events grew from {grown_events.old} to {events_partitions} "
                          "partitions (with jobs.status and jobs.status.handover)")
    if exec_partitions is not None:
        grown = grow_execution_topics(settings, exec_partitions, job_types,
                                      timeout_s=timeout_ms / 1000)  # fmt: skip
        if grown.nothing_to_do:
            console.print(f"the execution topics have {exec_partitions} partitions already")
            return
        for name in grown.to_grow:
            console.print(f"  {name}: {grown.counts[name]} -> {exec_partitions} partitions")
        if grown.limited:
            console.print(f"set JOBSTREAM_EXEC_PARTITIONS={exec_partitions} for the timers and "
                          "every worker before starting them")  # fmt: skip


@topics_app.command("list")
def topics_list() -> None:
    """List the topics the design needs, with partitions and cleanup policy."""
    settings = load_settings()
    table = Table("topic", "partitions", "cleanup.policy")
    for spec in Topics(settings).specs():
        table.add_row(spec.name, str(spec.partitions), spec.cleanup_policy)
    console.print(table)


def demo(
    base_port: int = BasePortOption,
    home: Path = StackHomeOption,
    timeout_ms: int = duration_option(
        "180s", "--timeout", help="How long the submitted jobs may take to settle."
    ),
) -> None:
    """Start the whole pipeline, run real demo jobs through it, and stop it."""
    from jobstream._ops.demo import run_demo

    run_demo(load_settings(), home, base_port, timeout_ms / 1000)


def pipeline(
    base_port: int = BasePortOption,
    home: Path = StackHomeOption,
    slow_ms: int = duration_option(
        "90s",
        "--slow-after",
        help="Report a process not healthy this long after it started (it is waited for).",
    ),
) -> None:
    """Run the whole pipeline (timers, status processor, retry router, demo workers,
    trigger processor) in the foreground until Ctrl-C or SIGTERM.

    A process that exits is started again; one slow to become healthy is reported and
    waited for. No process outlives this command, however it ends (SIGKILL too)."""
    from jobstream._ops.stack import HealthWatch, Stack, components
    from jobstream._pipeline.signals import stop_on_signals

    load_settings()  # a bad setting stops here, not in six processes
    stack = Stack(home)
    stop = stop_on_signals()

    def say(line: str) -> None:
        console.print(line, highlight=False, soft_wrap=True)

    def report(name: str, code: int, delay_s: float) -> None:
        when = f" in {delay_s:g} s" if delay_s else ""
        say(f"[red]{name} exited with {code}[/red], restarting it{when}:\n{stack.log_tail(name)}")

    try:
        stack.launch(components(base_port, triggers=True))
        say(f"started {len(stack.processes)} processes; logs in {stack.logs}")
        stack.supervise(stop, report, on_tick=HealthWatch(stack, say, slow_s=slow_ms / 1000))
    finally:
        stack.stop()
