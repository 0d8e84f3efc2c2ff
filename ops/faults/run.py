"""One fault run, start to end.

1. Start a Kafka cluster of the run's own (ops/faults/cluster.py), or take a running
   one of as many nodes shared by runs whose fault leaves it whole, and create the topics
   under a fresh prefix.
2. Start the pipeline as processes (ops/stack.py): the timers, the status processor, the
   retry router and two workers of the fault app (ops/faults/app.py).
3. Submit the jobs from a thread, each a lead ahead of its due time (ops/faults/load.py),
   and read jobs.events as it commits (ops/faults/observer.py).
4. About 15 s after the first job fell due, or once a third of the jobs have fired if
   that comes first, run the scenario's fault on a thread of its own.
5. Wait until every job has ended, or the deadline passes; then until the status
   processor has read all of jobs.events (a zombie's late outcome becomes a DUPLICATE
   there), and read jobs.events to its end.
6. Stop the pipeline and the cluster; count (ops/faults/tally.py).
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from jobstream._ops.bench.harness import CommittedWatch
from jobstream._ops.faults import app as fault_app
from jobstream._ops.faults import host, triggers
from jobstream._ops.faults.cluster import FaultCluster
from jobstream._ops.faults.groups import pipeline_groups, wait_assigned
from jobstream._ops.faults.journal import RUNS_DIR_ENV, read_runs
from jobstream._ops.faults.load import Load, Submitter
from jobstream._ops.faults.observer import EventsObserver
from jobstream._ops.faults.scenarios import LONG_WORK_MS, Scenario, Target
from jobstream._ops.faults.supervisor import Supervisor
from jobstream._ops.faults.tally import histories, poison_tally, tally
from jobstream._ops.kafka.ports import free_ports
from jobstream._ops.stack import YIELDING, Component, Stack, components, process_env, worker
from jobstream._pipeline.clock import now_ms
from jobstream._pipeline.config import Settings, load_settings
from jobstream._pipeline.durations import format_duration
from jobstream._pipeline.errors import ConfigurationError, JobstreamError
from jobstream._pipeline.kafka.admin import ensure_topics
from jobstream._pipeline.topics import Topics

log = logging.getLogger(__name__)

APP = fault_app.__name__
WORKERS = ("faults-0", "faults-1")
CONCURRENCY = 8
FAULT_AFTER_S = 15.0
FAULT_AFTER_SHARE = 1 / 3
LATE_OUTCOMES_S = 3.0
"""After the last job ended, how long a late outcome (a resumed zombie's) gets to appear."""
CATCH_UP_S = 60.0
"""How long the status processor and the reader get to read jobs.events to its end."""
PROGRESS_EVERY_S = 5.0
WORKFLOW_NUMBERS = ("submitted", "ended", "dead_lettered", "lost", "run_more_than_once",
                    "flagged", "unflagged_duplicate_runs", "ids")
"""What a run reports of the workflow scenario's jobs, apart from the load's."""
READY_TIMEOUT_S = 120.0

Say = Callable[[str], object]


@dataclass(frozen=True)
class RunOptions:
    jobs: int
    nodes: int | None = None
    """Broker nodes; None: what the scenario needs."""
    window_s: float = 30.0
    lead_s: float = 5.0
    deadline_s: float = 120.0
    """How long to wait for the jobs past the last due time (and the fault's end)."""
    secure: bool = False
    """A secured cluster (TLS, SASL/SCRAM, ACLs): every client logs in as its super user."""
    outage_s: float | None = None
    """How long a broker node or the state disk stays down; None: each scenario's own."""
    map_items: int = 100
    """Items of each map of the workflow scenario."""


def leaves_the_cluster_whole(scenario: Scenario) -> bool:
    """Whether every node ``scenario`` strikes runs again when its fault ends (a node
    paused is resumed, a node killed restarted), so that it may share a running cluster
    with other such runs (each on topics of its own). A network cut needs nodes started
    in cgroups of the run's own."""
    return not scenario.cuts_network


def run_scenario(scenario: Scenario, options: RunOptions, workdir: Path, say: Say = log.info,
                 *, shared: FaultCluster | None = None) -> dict[str, Any]:  # fmt: skip
    """Run one scenario in a folder of its own under ``workdir``; its numbers and notes.

    ``shared``: a running cluster of as many nodes to run on, left running, for a
    scenario that :func:`leaves_the_cluster_whole`; otherwise the run starts a cluster of
    its own and removes it.
    """
    nodes = options.nodes or scenario.nodes
    if nodes < scenario.nodes:
        raise ConfigurationError(f"{scenario.name} needs {scenario.nodes} broker nodes, "
                                 f"not {nodes}")  # fmt: skip
    if shared is not None and not (leaves_the_cluster_whole(scenario) and nodes == shared.nodes
                                   and options.secure == shared.secure):  # fmt: skip
        raise ConfigurationError(f"{scenario.name} cannot share a cluster: it needs one "
                                 "of its own")  # fmt: skip
    home = workdir / f"{scenario.name}-{time.strftime('%H%M%S')}-{uuid.uuid4().hex[:4]}"
    home = home.resolve()
    home.mkdir(parents=True)
    network = host.NetworkCut(f"jobstream-faults-{home.name}") if scenario.cuts_network else None
    cluster = shared or FaultCluster(home / "kafka", nodes, network, secure=options.secure)
    started = time.monotonic()
    if scenario.state_disk_mb:
        host.mount_small_disk(home / "state", scenario.state_disk_mb)
    try:
        if shared is None:
            say(f"{scenario.name}: starting a {nodes}-node Kafka cluster in {home / 'kafka'}")
            cluster.start()
        layout = cluster.layout
        settings = load_settings(
            bootstrap_servers=layout.bootstrap, topic_prefix=f"faults-{uuid.uuid4().hex[:8]}.",
            replication_factor=layout.replication, job_types=(fault_app.JOB_TYPE,),
            librdkafka={}, schema_registry_url=None, **cluster.security_settings(),
        )  # fmt: skip
        ensure_topics(settings.kafka_config, Topics(settings).specs(),
                      replication_factor=settings.replication_factor)  # fmt: skip
        result = _run(scenario, options, settings, cluster, home, say)
    finally:
        if shared is None:
            cluster.stop()
        if scenario.state_disk_mb:
            host.unmount(home / "state")
    return {"scenario": scenario.name, "summary": scenario.summary, "nodes": nodes,
            "jobs": options.jobs, "window_s": options.window_s, "lease_s": scenario.lease_s,
            **result, "seconds": round(time.monotonic() - started, 1),
            "home": str(home)}  # fmt: skip


def skewed(parts: list[Component], clocks: dict[str, int]) -> list[Component]:
    """``parts``, those named in ``clocks`` with their host clock off by as many ms."""
    unknown = set(clocks) - {part.name for part in parts}
    if unknown:
        raise ConfigurationError(f"no component {sorted(unknown)} to skew the clock of")
    return [replace(part, env=(*part.env, *host.skewed_clock_env(clocks[part.name])))
            if part.name in clocks else part for part in parts]  # fmt: skip


def _run(scenario: Scenario, options: RunOptions, settings: Settings, cluster: FaultCluster,
         home: Path, say: Say) -> dict[str, Any]:  # fmt: skip
    stack = Stack(home / "stack")
    stack.env = run_env(settings, home)
    base = free_ports(12)
    beat: tuple[str, ...] = ()
    if scenario.heartbeat_s:
        beat = ("--heartbeat", format_duration(round(scenario.heartbeat_s * 1000)))
    if scenario.lease_s:  # the workers hold their runs' leases as the status processor does
        beat += ("--lease", format_duration(round(scenario.lease_s * 1000)))
    parts = components(base, app=APP, job_types=(), lease_s=scenario.lease_s)
    parts += [worker(fault_app.JOB_TYPE, worker_id, base + 3 + i, app=APP,
                     concurrency=CONCURRENCY, extra=(*beat, "--isolation", scenario.isolation))
              for i, worker_id in enumerate(WORKERS)]  # fmt: skip
    parts = skewed(parts, dict(scenario.clocks))
    workers_network = None
    if scenario.cuts_worker:
        workers_network = host.NetworkCut(f"jobstream-workers-{home.name}")
        parts = [replace(part, launcher=workers_network.launcher(part.name))
                 if part.name.startswith("worker-") else part for part in parts]  # fmt: skip
    if scenario.triggers:
        parts.append(Component("trigger-processor", ("trigger-processor", "--instance-id", "0"),
                               base + 10, YIELDING))  # fmt: skip
    supervisor = Supervisor(stack)
    supervisor.restarts_workers = scenario.restarts_workers
    target = Target(supervisor, cluster, spare_port=base + 9, runs_dir=home / "runs",
                    state_dir=home / "state", settings=settings,
                    outage_s=options.outage_s, map_items=options.map_items,
                    workers_network=workers_network)  # fmt: skip
    fault = FaultThread(scenario, target)
    load = Load(options.jobs, round(options.window_s * 1000), round(options.lead_s * 1000),
                scenario.fail_share, long_share=scenario.long_share,
                long_work_ms=LONG_WORK_MS)  # fmt: skip
    say(f"{scenario.name}: starting the pipeline ({len(parts)} processes, logs in {stack.logs})")
    observer: EventsObserver | None = None
    submitter: Submitter | None = None
    try:
        supervisor.start(parts)
        groups = pipeline_groups(settings, fault_app.JOB_TYPE, len(WORKERS))
        waited = wait_assigned(settings, groups, READY_TIMEOUT_S)
        say(f"{scenario.name}: every consumer group ready {waited:.1f} s after /healthz")
        observer = EventsObserver(settings)
        t0 = now_ms() + load.lead_ms
        submitter = Submitter(settings, load, t0, key_prefix=settings.topic_prefix)
        submitter.start()
        ending = _follow(observer, submitter, fault, supervisor, load, t0,
                         round(options.deadline_s * 1000), say)  # fmt: skip
        until = now_ms()
        stacks = {}
        if ending == "all ended":
            caught_up = _catch_up(observer, settings, say)
        else:
            caught_up = None
            stacks = supervisor.dump_stacks(home / "stacks")
            say(f"{scenario.name}: not every job ended; the processes' stacks: {home / 'stacks'}")
    finally:
        if submitter is not None:
            submitter.halt.set()
            submitter.join(60)
        if fault.is_alive():
            fault.join(180)
        supervisor.check_exits()
        supervisor.stop()
        if workers_network is not None:
            workers_network.close()
        if observer is not None:
            observer.close()
    runs = read_runs(home / "runs")
    numbers = tally(submitter.due, observer.seen, runs, fault_ms=fault.began_ms, until_ms=until)
    shown = {*numbers["ids"]["lost"], *numbers["ids"]["unflagged"], *numbers["ids"]["flagged"][:3]}
    if target.workflow_jobs:
        flows = tally(target.workflow_jobs, observer.seen, runs, fault_ms=fault.began_ms,
                      until_ms=until)  # fmt: skip
        numbers["workflows"] = {key: flows[key] for key in WORKFLOW_NUMBERS}
        shown |= {*flows["ids"]["lost"], *flows["ids"]["unflagged"]}
    if target.trigger_feed is not None:
        jobs = tally(target.trigger_jobs, observer.seen, runs, fault_ms=fault.began_ms,
                     until_ms=until)  # fmt: skip
        others = set(submitter.due) | set(target.poison) | set(target.workflow_jobs)
        found = triggers.trigger_tally(target.trigger_feed, observer.seen, others,
                                       triggers.dead_letters(settings))  # fmt: skip
        numbers["triggers"] = {
            **{key: jobs[key] for key in WORKFLOW_NUMBERS if key not in ("ids", "dead_lettered")},
            "jobs_dead_lettered": jobs["dead_lettered"], **found,
            "ids": {**jobs["ids"], **found["ids"]},
        }  # fmt: skip
        shown |= {*jobs["ids"]["lost"], *jobs["ids"]["unflagged"], *found["ids"]["fired_twice"]}
    if target.poison:
        numbers["poison"] = poison_tally(target.poison, submitter.due, observer.seen,
                                         target.cancelled_at)  # fmt: skip
        numbers["worker_deaths"] = [(e.name, _seconds(e.seen_ms, t0)) for e in supervisor.deaths]
        numbers["poison_ids"] = sorted(target.poison)
        shown |= {*target.poison, *numbers["poison"]["ids_started_more_than_twice"]}
    notes = [{"at_s": _seconds(note.at_ms, t0), "action": note.action} for note in target.notes]
    exits = [{"name": e.name, "code": e.code, "at_s": _seconds(e.seen_ms, t0),
              "log_tail": e.log_tail} for e in supervisor.exits]  # fmt: skip
    return {
        "ending": ending,
        "status_caught_up": caught_up,
        "submit_retries": submitter.retries,
        "handler_runs": len(runs),
        "runs_by_worker": dict(sorted(Counter(run.worker_id for run in runs).items())),
        **numbers,
        "fault": notes,
        "fault_error": None if fault.error is None else repr(fault.error),
        "unexpected_exits": exits,
        "evidence": histories(shown, observer.seen, runs, t0),
        "stacks_at_deadline": stacks,
        "logs": str(stack.logs),
        "kafka_logs": [str(cluster.log_path(n.node_id)) for n in cluster.layout.nodes],
    }


def _seconds(at_ms: int, first_due_ms: int) -> float:
    """An instant as seconds after the first job fell due."""
    return round((at_ms - first_due_ms) / 1000, 2)


def run_env(settings: Settings, home: Path) -> dict[str, str]:
    """The pipeline processes' environment: a stack's on ``settings`` (``process_env``),
    with the run's job types and folders."""
    return {
        **process_env(settings),
        "JOBSTREAM_JOB_TYPES": ",".join(settings.job_types),
        "JOBSTREAM_STATE_DIR": str(home / "state"),
        RUNS_DIR_ENV: str(home / "runs"),
    }


class FaultThread(threading.Thread):
    """Runs the scenario's fault once it is started; ``began_ms`` is its first note."""

    def __init__(self, scenario: Scenario, target: Target) -> None:
        super().__init__(name=f"fault-{scenario.name}", daemon=True)
        self.scenario, self.target = scenario, target
        self.error: BaseException | None = None

    @property
    def began_ms(self) -> int | None:
        return self.target.notes[0].at_ms if self.target.notes else None

    @property
    def ended_ms(self) -> int | None:
        if self.is_alive() or not self.target.notes:
            return None
        return self.target.notes[-1].at_ms

    def run(self) -> None:
        try:
            self.scenario.inject(self.target)
        except BaseException as exc:  # reported with the run's numbers
            log.exception("the fault %s failed", self.scenario.name)
            self.error = exc
            self.target.note(f"the fault failed: {exc!r}")


def _follow(observer: EventsObserver, submitter: Submitter, fault: FaultThread,
            supervisor: Supervisor, load: Load, t0: int, deadline_ms: int,
            say: Say) -> str:  # fmt: skip
    """Read jobs.events, start the fault when its time comes, and return how waiting
    ended: ``all ended`` or ``deadline``."""
    fault_at = t0 + round(FAULT_AFTER_S * 1000)
    last_due = load.due_ms(t0, load.jobs - 1)
    next_progress = time.monotonic() + PROGRESS_EVERY_S
    while True:
        observer.poll(0.1)
        now = now_ms()
        for found in supervisor.check_exits():
            say(f"{found.name} exited with {found.code} on its own; last lines:\n{found.log_tail}")
        if submitter.error is not None:
            raise JobstreamError(f"submitting failed: {submitter.error!r}")
        if (
            not fault.is_alive()
            and fault.began_ms is None
            and (now >= fault_at or len(observer.fired) >= load.jobs * FAULT_AFTER_SHARE)
        ):
            say(f"fault: {fault.scenario.name}, {(now - t0) / 1000:.1f} s after the first "
                f"due time, {len(observer.fired)} jobs fired")  # fmt: skip
            fault.start()
        submitted = not submitter.is_alive()
        fault_done = fault.ended_ms
        target = fault.target
        awaited = {*submitter.due, *target.poison, *target.workflow_jobs, *target.trigger_jobs}
        if submitted and fault_done is not None and observer.ended >= awaited:
            return "all ended"
        if fault_done is not None and now > max(last_due, fault_done) + deadline_ms:
            return "deadline"
        if time.monotonic() >= next_progress:
            next_progress += PROGRESS_EVERY_S
            say(f"{len(submitter.due)} submitted, {len(observer.fired)} fired, "
                f"{len(observer.ended)} ended")  # fmt: skip


def _catch_up(observer: EventsObserver, settings: Settings, say: Say) -> bool:
    """Give late outcomes time to appear, wait until the status processor has read all of
    jobs.events (its DUPLICATE records come out of that), and read to the end."""
    grace_until = time.monotonic() + LATE_OUTCOMES_S
    while time.monotonic() < grace_until:
        observer.poll(0.1)
    watch = CommittedWatch(settings, Topics(settings).events, "jobstream.status",
                           settings.events_partitions)  # fmt: skip
    deadline = time.monotonic() + CATCH_UP_S
    try:
        while time.monotonic() < deadline:
            observer.poll(0.1)
            # A transactional topic ends with commit markers a reader never commits past.
            if watch.committed() >= watch.end() - settings.events_partitions:
                break
        else:
            say("the status processor did not read all of jobs.events in time")
            return False
    finally:
        watch.close()
    while time.monotonic() < deadline:
        if observer.at_end():
            return True
    say("the reader did not reach the end of jobs.events in time")
    return False
