"""``jobstream worker``: serve job types with the handlers of an app module.

The first SIGTERM or SIGINT drains (no new work; running jobs get ``--drain-timeout``
to finish and their outcomes are committed; the rest are given up, reported FAILED
``WorkerStopped`` and retried). A
second signal stops draining at once.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from types import FrameType

import typer

from jobstream._pipeline import metrics
from jobstream._pipeline.cli_options import MetricsPortOption, take_niceness
from jobstream._pipeline.config import load_settings
from jobstream._pipeline.durations import duration_option, format_duration
from jobstream._pipeline.kafka.clock_watch import watch_clock
from jobstream._pipeline.runtime.schedule import DEFAULT_INTERVAL_S
from jobstream._pipeline.worker.app import load_app
from jobstream._pipeline.worker.heartbeat import default_worker_id
from jobstream._pipeline.worker.loop import WorkerLoop
from jobstream._pipeline.worker.options import (
    BURST_HELD,
    CLAIM_AHEAD_S,
    CLAIMED_AHEAD_MOST,
    MIN_PREFETCH,
    Isolation,
    WorkerOptions,
)
from jobstream._pipeline.worker.progress import DEFAULT_INTERVAL_S as PROGRESS_INTERVAL_S

HeartbeatOption = duration_option(
    "10s", "--heartbeat", minimum="50ms", help="Time between heartbeats of a running job.",
)  # fmt: skip
LeaseOption = duration_option(
    "30s", "--lease", minimum="100ms", envvar="JOBSTREAM_LEASE",
    help="The status processor's lease: a run none of whose heartbeats has reached the "
    "brokers for 3/4 of it stops itself (ctx.lease_ok turns False).",
)  # fmt: skip
DrainTimeoutOption = duration_option(
    "30s", "--drain-timeout", help="On SIGTERM, how long running jobs may finish.",
)  # fmt: skip
RevokeTimeoutOption = duration_option(
    "60s", "--revoke-timeout", maximum="4m",
    help="A type with a concurrency limit: how long its runs may take to end when a "
    "rebalance takes its partitions (the group waits for them; under librdkafka's "
    "max.poll.interval.ms, 5m).",
)  # fmt: skip
CancelGraceOption = duration_option(
    "5s", "--cancel-grace",
    help="How long a cancelled run may go on (a sync handler that does not check "
    "ctx.cancelled) before it is reported CANCELLED without it.",
)  # fmt: skip
ProgressIntervalOption = duration_option(
    format_duration(round(PROGRESS_INTERVAL_S * 1000)), "--progress-interval",
    help="Least time between two progress reports of a running job (ctx.progress) on "
    "jobs.events: the latest waits for it, the last goes before the outcome anyway.",
)  # fmt: skip
ClaimAheadOption = duration_option(
    format_duration(round(CLAIM_AHEAD_S * 1000)), "--claim-ahead",
    help="A job fired ahead (JOBSTREAM_FIRE_LEAD) is claimed this long before its due "
    "instant, with those due within as long again after it (a burst, "
    "--claim-on-arrival-above, is claimed as it arrives). Longer holds more runs in "
    "memory, shows them RUNNING sooner, and a worker that dies takes more with it (each "
    "waits for its lease, 30 s, then is retried alone). A type with a concurrency limit "
    "claims 20 ms ahead whatever this says.",
)  # fmt: skip
CommitIntervalOption = duration_option(
    format_duration(round(DEFAULT_INTERVAL_S * 1000)), "--commit-interval",
    help="Least time between two transactions of outcomes: larger batches, later outcomes.",
)  # fmt: skip


def worker(
    app: str = typer.Option(..., "--app", help="Module with the handlers: 'pkg.jobs' "
                            "(its attribute 'app') or 'pkg.jobs:attribute'."),
    job_types: list[str] | None = typer.Option(None, "--type", metavar="TYPE",
                                               help="Job type to serve; repeat for several "
                                               "(default: every type of the app)."),
    pool: str | None = typer.Option(None, "--pool", help="Serve only the jobs that "
                                    "require this pool, e.g. gpu (default: only those that "
                                    "require none)."),
    concurrency: int = typer.Option(8, "--concurrency", min=1,
                                    help="Jobs running at once in this process."),
    isolation: Isolation = typer.Option("thread", "--isolation",
                                        help="Where handlers run: 'thread' (sync ones on "
                                        "threads, async ones on an event loop) or 'process' "
                                        "(each run in one of --concurrency child processes: a "
                                        "crash kills one child, a timeout kills the run). "
                                        "docs/workers.md says which to pick."),
    worker_id: str | None = typer.Option(None, "--worker-id", envvar="JOBSTREAM_WORKER_ID",
                                         help="Unique name on jobs.workers and in the "
                                         "transactional ids (default: hostname-pid); a "
                                         "given id also makes the worker a static group "
                                         "member, which takes its partitions back at once "
                                         "when restarted."),
    heartbeat_ms: int = HeartbeatOption,
    lease_ms: int = LeaseOption,
    progress_interval_ms: int = ProgressIntervalOption,
    drain_timeout_ms: int = DrainTimeoutOption,
    prefetch: int | None = typer.Option(None, "--prefetch", min=1,
                                        help="Records buffered per priority tier (default: "
                                        f"the concurrency, at least {MIN_PREFETCH})."),
    commit_interval_ms: int = CommitIntervalOption,
    claim_ahead_ms: int = ClaimAheadOption,
    claim_on_arrival_above: int = typer.Option(
        BURST_HELD, "--claim-on-arrival-above", min=1,
        help="Records held and runs claimed before their instant (over every type) that "
        "make a burst: each "
        "type then claims its records as they arrive, up to JOBSTREAM_FIRE_LEAD_MOST "
        "ahead, rather than --claim-ahead before their instant."),
    claimed_ahead_most: int = typer.Option(CLAIMED_AHEAD_MOST, "--claimed-ahead-most", min=1,
                                           help="Runs claimed ahead and waiting for their "
                                           "instant, at most; the others wait to be claimed."),
    revoke_timeout_ms: int = RevokeTimeoutOption,
    cancel_grace_ms: int = CancelGraceOption,
    metrics_port: int = MetricsPortOption,
) -> None:  # fmt: skip
    """Run jobs: consume a type's executions, run its handler, report the outcomes."""
    settings = load_settings()
    take_niceness(settings)
    if os.getcwd() not in sys.path:  # `--app myapp.jobs` from the project dir, as with -m
        sys.path.insert(0, os.getcwd())
    options = WorkerOptions(
        worker_id=worker_id or default_worker_id(), static_member=worker_id is not None,
        job_types=tuple(job_types or ()), pool=pool,
        concurrency=concurrency, isolation=isolation, heartbeat_s=heartbeat_ms / 1000,
        lease_s=lease_ms / 1000,
        progress_interval_s=progress_interval_ms / 1000,
        drain_timeout_s=drain_timeout_ms / 1000, prefetch=prefetch,
        commit_interval_s=commit_interval_ms / 1000, revoke_timeout_s=revoke_timeout_ms / 1000,
        cancel_grace_s=cancel_grace_ms / 1000, claim_ahead_s=claim_ahead_ms / 1000,
        claim_on_arrival_above=claim_on_arrival_above, claimed_ahead_most=claimed_ahead_most,
    )  # fmt: skip
    watch = watch_clock(settings, "worker")
    loop = WorkerLoop(settings, load_app(app), options)
    if metrics_port:
        metrics.serve(metrics_port, settings.metrics_host)
    stop, abandon = threading.Event(), threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        (abandon if stop.is_set() else stop).set()

    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, on_signal)
    try:
        loop.run(stop, abandon)
    finally:
        watch.stop()
