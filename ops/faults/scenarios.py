"""The faults, one small function each, and the registry the command reads.

A scenario function gets a :class:`Target` (the run's processes and cluster) and does
its fault from start to end, noting each step with ``target.note``: the first note is
the instant the fault began. Restarts wait until the process is healthy (or the node is
back in the metadata), and the note after says when that was.

A fault on a worker strikes the first worker whose handler finishes a run once the fault
is due (its line appears in the handler-side record), at once, while that run's outcome
waits for the worker's next transaction (100 ms apart): the moment when a crash or a
pause leaves the most to mend, which a kill at a random instant would often miss, and a
worker that is busy (the group may leave one with no partition of the jobs' tier).

A poison scenario's fault is a few jobs that misbehave (ops/faults/app.py), submitted due
at once among the load: their handler kills its worker (the run then starts every worker
that exits again, as systemd or compose ``restart:`` would, and counts its deaths), never
returns (the workers run handlers in child processes, which the timeout kills), or runs
until the scenario cancels it.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from jobstream._ops.faults import host, triggers, workflows
from jobstream._ops.faults.app import JOB_TYPE, POISON
from jobstream._ops.faults.cluster import FaultCluster
from jobstream._ops.faults.host import NetworkCut
from jobstream._ops.faults.journal import machine_now_ms
from jobstream._ops.faults.supervisor import Supervisor
from jobstream._pipeline.clock import now_ms
from jobstream._pipeline.config import Settings
from jobstream._pipeline.jobs.client import JobClient
from jobstream._pipeline.model.job import JobRequest, RetryPolicy
from jobstream._pipeline.status.query import read_statuses

RESTART_AFTER_S = 2.0
"""A killed process is started again this long after the kill, as a supervisor would."""
BROKER_DOWN_S = 20.0
"""How long a broker node stays killed or paused."""
KILL_LEASE_S = 4.0
KILL_HEARTBEAT_S = 1.0
"""The lease in the scenarios that kill a worker: its runs end LOST when it passes."""
PAUSE_LEASE_S = 10.0
PAUSE_HEARTBEAT_S = 2.0
PAUSE_S = PAUSE_LEASE_S + 5.0
"""How long a paused (or cut off) worker stays stopped: past its lease, and past its group
session."""
LONG_SHARE = 0.02
LONG_WORK_MS = 10_000
"""In the scenarios that stop a worker mid-run, 1 job in 50 works 10 s in steps, each step
only while its run holds its lease (ops/faults/app.py): a worker stopped with such a run
must not work on once its retry has started elsewhere."""
REPLACEMENT_WORKER = "faults-9"
DISK_FULL_S = 20.0
"""How long the state folder's disk stays full."""
STATE_DISK_MB = 256
"""The size of the state folder's own disk in the full-disk scenario."""
POISON_JOBS = 3
POISON_ATTEMPTS = 3
"""Poison jobs a poison scenario submits, and the attempts each is allowed."""
POISON_OWNER = "faults-poison"
HANG_TIMEOUT_MS = 2000
"""The timeout of a poison job that never returns."""
CANCEL_WITHIN_MS = 5000
"""How soon after its cancel a running job must be seen CANCELLED in a fault run. The
promise is 2 s, held on a quiet stack by tests/test_cancel_end_to_end.py; the suite runs
two scenarios side by side, each with its brokers, pipeline and load, on two cores, where
the cancel's three hops (intake, the timers' transaction, jobs.control) took up to 2.7 s.
A cancel that never reached the run would take the handler's whole wait (600 s)."""


@dataclass(frozen=True)
class Poison:
    """A poison scenario's jobs: their kind (ops/faults/app.py) and how each must end."""

    kind: str
    ends: str
    """The kind of its terminal event."""
    starts: int
    """How many times it starts: once per attempt, or once for a cancelled run."""


CLOCK_SKEWS_MS = (("timers", 5_000), ("status-processor", -5_000),
                  ("worker-faults-0", 30_000), ("worker-faults-1", -30_000))
"""The clock-skew scenario's host clocks, by component: each its offset in ms."""


@dataclass(frozen=True)
class Note:
    at_ms: int
    action: str


@dataclass
class Target:
    """What a scenario acts on, and its notebook."""

    stack: Supervisor
    cluster: FaultCluster
    spare_port: int
    """A free /healthz port for a process the scenario starts anew."""
    runs_dir: Path
    """The handler-side record (ops/faults/journal.py)."""
    state_dir: Path
    """The processors' state folders (JOBSTREAM_STATE_DIR)."""
    settings: Settings
    notes: list[Note] = field(default_factory=list)
    poison: dict[str, int] = field(default_factory=dict)
    """The poison jobs submitted (job id -> due time): they must end."""
    cancelled_at: dict[str, int] = field(default_factory=dict)
    """When each poison job of a cancel scenario was cancelled (epoch ms)."""
    outage_s: float | None = None
    """How long a broker node or the state disk stays down; None: the scenario's own
    (BROKER_DOWN_S, DISK_FULL_S)."""
    map_items: int = 100
    """Items of each map of the workflow scenario (ops/faults/workflows.py)."""
    workflow_jobs: dict[str, int] = field(default_factory=dict)
    """Every job of the workflows a scenario submitted, their maps' items too (job id ->
    submitted at): they must end as the load's do."""
    trigger_feed: triggers.SourceFeed | None = None
    """The trigger scenario's source producer (ops/faults/triggers.py)."""
    trigger_jobs: dict[str, int] = field(default_factory=dict)
    """The job of every matching source record of the trigger scenario (job id -> its
    record delivered at): they must end as the load's do."""
    workers_network: NetworkCut | None = None
    """The workers' cgroups, in a scenario that cuts one off (``cuts_worker``)."""

    def outage(self, default_s: float) -> float:
        return default_s if self.outage_s is None else self.outage_s

    def note(self, action: str) -> None:
        self.notes.append(Note(now_ms(), action))


Inject = Callable[[Target], None]


@dataclass(frozen=True)
class Scenario:
    name: str
    summary: str
    inject: Inject
    nodes: int = 1
    """Broker nodes the scenario needs (3: replication 3, min.insync.replicas 2)."""
    lease_s: float | None = None
    """The status processor's lease, when the scenario needs another than the default."""
    heartbeat_s: float | None = None
    fail_share: float = 0.0
    """Share of jobs whose first attempt fails on purpose, to give retries in flight."""
    long_share: float = 0.0
    """Share of jobs that work :data:`LONG_WORK_MS` in steps: no two runs of one may
    overlap."""
    cuts_worker: bool = False
    """The workers start in cgroups of their own, so that one can be cut off the network."""
    clocks: tuple[tuple[str, int], ...] = ()
    """Components whose host clock is off from the start: (name, offset in ms)."""
    state_disk_mb: int | None = None
    """The state folder on a disk of its own, this small (a tmpfs)."""
    cuts_network: bool = False
    """Broker nodes start in cgroups of their own, so that one can be cut off the network."""
    poison: Poison | None = None
    """The misbehaving jobs a poison scenario submits."""
    isolation: str = "thread"
    """Where the workers run their handlers (``--isolation``)."""
    triggers: bool = False
    """A trigger processor runs beside the pipeline (ops/faults/triggers.py)."""

    @property
    def restarts_workers(self) -> bool:
        """A worker that exits is started again at once (poison that kills its worker)."""
        return self.poison is not None and self.poison.kind.startswith("kill")


RUN_WAIT_S = 5.0


def busy_worker(target: Target) -> str:
    """The worker whose handler records a run first from now on (its component's name):
    a worker may hold no partition of the tier the jobs are on, and hitting it would
    test nothing. After RUN_WAIT_S without a run, the first worker."""
    workers = target.stack.workers()
    records = {name: target.runs_dir / f"runs-{worker_id}-{target.stack.pid(name)}.jsonl"
               for name, worker_id in workers.items()}  # fmt: skip
    sizes = {name: _size(path) for name, path in records.items()}
    deadline = time.monotonic() + RUN_WAIT_S
    while time.monotonic() < deadline:
        for name, path in records.items():
            if _size(path) > sizes[name]:
                return name
        time.sleep(0.001)
    name = sorted(workers)[0]
    target.note(f"no worker finished a run within {RUN_WAIT_S:.0f} s; striking {name}")
    return name


def _size(path: Path) -> int:
    return path.stat().st_size if path.exists() else 0


def kill_and_restart(name: str) -> Inject:
    """SIGKILL ``name``, start it again as it was 2 s later."""
    return partial(_kill_and_restart, name=name)


def _kill_and_restart(target: Target, name: str,
                      while_down: Callable[[], str] | None = None) -> None:  # fmt: skip
    """SIGKILL ``name``; do ``while_down`` (its note is what it did); start it again."""
    target.note(f"SIGKILL {name} (pid {target.stack.kill(name)})")
    if while_down is not None:
        target.note(while_down())
    time.sleep(RESTART_AFTER_S)
    target.note(f"starting {name} again")
    target.note(f"{name} healthy (pid {target.stack.restart(name)})")


def kill_worker(target: Target) -> None:
    _kill_and_restart(target, busy_worker(target))


def kill_and_replace_worker(target: Target) -> None:
    name = busy_worker(target)
    target.note(f"SIGKILL {name} (pid {target.stack.kill(name)})")
    time.sleep(RESTART_AFTER_S)
    target.note(f"starting worker {REPLACEMENT_WORKER} in its place")
    new, pid = target.stack.replace(name, REPLACEMENT_WORKER, target.spare_port)
    target.note(f"{new} healthy (pid {pid})")


def kill_worker_for_good(target: Target) -> None:
    name = busy_worker(target)
    target.note(f"SIGKILL {name} (pid {target.stack.kill(name)}), not started again")


def submit_poison(kind: str) -> Inject:
    """Submit POISON_JOBS jobs of ``kind`` (ops/faults/app.py), due now, among the load;
    cancel those of kind ``cancel`` once they run."""
    return partial(_submit_poison, kind=kind)


def _submit_poison(target: Target, kind: str) -> None:
    retry = RetryPolicy(max_attempts=POISON_ATTEMPTS, initial_backoff_ms=500, jitter=0)
    timeout = HANG_TIMEOUT_MS if kind == "hang" else None
    request = JobRequest(job_type=JOB_TYPE, owner=POISON_OWNER, params={POISON: kind},
                         retry=retry, timeout_ms=timeout)  # fmt: skip
    with JobClient(target.settings) as client:
        ids = client.submit_many([request] * POISON_JOBS)
        target.poison.update(dict.fromkeys(ids, now_ms()))
        target.note(f"submitted {len(ids)} {kind} poison jobs ({POISON_ATTEMPTS} attempts each)")
        if kind != "cancel":
            return
        for job_id in ids:
            _wait_running(target.settings, job_id)
            target.cancelled_at[job_id] = now_ms()
            client.cancel(job_id, reason="the fault suite cancels a running job")
            target.note(f"cancelled {job_id} while it ran")


def _wait_running(settings: Settings, job_id: str, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        status = read_statuses(settings, owner=POISON_OWNER).get(job_id)
        if status is not None and status.state == "RUNNING":
            return
        time.sleep(0.2)
    raise TimeoutError(f"{job_id} did not start running within {timeout_s:.0f} s")


def pause_and_resume(name: str) -> Inject:
    """SIGSTOP ``name`` for PAUSE_S, past its group session and its transaction's timeout,
    then SIGCONT."""
    return partial(_pause_and_resume, name=name)


def _pause_and_resume(target: Target, name: str) -> None:
    target.note(f"SIGSTOP {name} (pid {target.stack.pause(name)})")
    time.sleep(PAUSE_S)
    target.stack.resume(name)
    target.note(f"SIGCONT {name}")


def pause_worker(target: Target) -> None:
    _pause_and_resume(target, worker_in_a_long_run(target))


def worker_in_a_long_run(target: Target) -> str:
    """A worker that began a long run (ops/faults/app.py, ``work_ms``) less than half of
    one ago, so that the fault strikes it mid-run; after RUN_WAIT_S without one, the
    busy worker (:func:`busy_worker`)."""
    workers = target.stack.workers()
    deadline = time.monotonic() + RUN_WAIT_S
    while time.monotonic() < deadline:
        for name, worker_id in sorted(workers.items()):
            began = target.runs_dir / f"working-{worker_id}.txt"
            lines = began.read_text().split() if began.exists() else []
            if lines and machine_now_ms() - int(lines[-1]) < LONG_WORK_MS / 2:
                return name
        time.sleep(0.05)
    target.note(f"no worker in a long run within {RUN_WAIT_S:.0f} s")
    return busy_worker(target)


def cut_off_worker(target: Target) -> None:
    """Cut the busy worker off the network for PAUSE_S: it runs on, but none of its
    heartbeats reaches the brokers."""
    assert target.workers_network is not None, "a worker cut needs the workers in cgroups"
    name = worker_in_a_long_run(target)
    target.workers_network.cut(name)
    target.note(f"{name} cut off the network (every packet it sends dropped)")
    time.sleep(PAUSE_S)
    target.workers_network.heal(name)
    target.note(f"{name} back on the network")


TIMER_STATE = "*jobstream.timers.*"
"""The timers' state folders under the run's state folder, one per instance."""


def corrupt_timer_state(target: Target) -> None:
    """SIGKILL the timers, scribble over every file of their partition stores (as a bad
    disk would), start them again 2 s later."""

    def scribble() -> str:
        files = [path for path in target.state_dir.glob(f"{TIMER_STATE}/*/*")
                 if path.is_file() and path.name != "LOCK"]  # fmt: skip
        for path in files:
            path.write_bytes(b"\xff" * max(1, path.stat().st_size))
        return f"scribbled over {len(files)} files of the timers' state"

    _kill_and_restart(target, "timers", scribble)


def delete_timer_state(target: Target) -> None:
    """SIGKILL the timers, delete their state folders, start them again 2 s later."""

    def delete() -> str:
        folders = [path for path in target.state_dir.glob(TIMER_STATE) if path.is_dir()]
        for folder in folders:
            shutil.rmtree(folder)
        return f"deleted {len(folders)} state folders of the timers"

    _kill_and_restart(target, "timers", delete)


def fill_state_disk(target: Target) -> None:
    """Fill the disk of the processors' state folders for DISK_FULL_S, then free it."""
    target.note("filling the state folders' disk")
    written = host.fill(target.state_dir)
    target.note(f"state disk full ({written >> 20} MB written)")
    time.sleep(target.outage(DISK_FULL_S))
    host.empty(target.state_dir)
    target.note("state disk freed")


def skewed_clocks(target: Target) -> None:
    """Nothing to do now: the components have run with skewed clocks from the start."""
    skews = ", ".join(f"{name} {skew / 1000:+g} s" for name, skew in CLOCK_SKEWS_MS)
    target.note(f"host clocks off since the start: {skews}")


def kill_broker(target: Target) -> None:
    node = target.cluster.busiest_node()
    target.note(f"SIGKILL kafka node {node} (pid {target.cluster.kill(node)})")
    time.sleep(target.outage(BROKER_DOWN_S))
    target.note(f"starting kafka node {node} again")
    target.cluster.restart(node)
    target.note(f"kafka node {node} back in the metadata")


def cut_off_broker(target: Target) -> None:
    node = target.cluster.busiest_node()
    target.cluster.cut_off(node)
    target.note(f"kafka node {node} cut off the network (every packet it sends dropped)")
    time.sleep(target.outage(BROKER_DOWN_S))
    target.cluster.heal(node)
    target.note(f"kafka node {node} back on the network")


def pause_broker(target: Target) -> None:
    node = target.cluster.busiest_node()
    target.note(f"SIGSTOP kafka node {node} (pid {target.cluster.pause(node)})")
    time.sleep(target.outage(BROKER_DOWN_S))
    target.cluster.resume(node)
    target.note(f"SIGCONT kafka node {node}")


def workflows_under_kills(target: Target) -> None:
    """Submit the workflow scenario's workflows, SIGKILL the timers once their maps run,
    signal the workflows, SIGKILL a busy worker (each started again 2 s later)."""
    with JobClient(target.settings) as client:
        ids, jobs = workflows.submit(client, target.settings.topic_prefix, target.map_items)
        target.workflow_jobs.update(jobs)
        target.note(f"submitted {len(ids)} workflows of {target.map_items} map items each")
        if not workflows.wait_started(lambda: _items_ended(target) >= len(ids)):
            target.note("no map item ended within "
                        f"{workflows.MAP_STARTED_TIMEOUT_S:.0f} s")  # fmt: skip
        _kill_and_restart(target, "timers")
        for workflow_id in ids:
            client.signal(workflows.OWNER, workflow_id, workflows.SIGNAL, {"from": "faults"},
                          requested_by="faults")  # fmt: skip
        target.note(f"signalled {len(ids)} workflows {workflows.SIGNAL!r}")
    kill_worker(target)


def triggers_under_kills(target: Target) -> None:
    """Define the trigger scenario's trigger and feed its source (ops/faults/triggers.py);
    once its jobs run, SIGKILL the trigger processor (started again 2 s later), then the
    Kafka node leading most partitions (started again after the outage); stop the feed
    a little after."""
    feed = triggers.start_feed(target.settings, target.cluster.layout.replication)
    target.trigger_feed = feed
    try:
        time.sleep(triggers.FIRST_JOBS_S)
        _kill_and_restart(target, "trigger-processor")
        time.sleep(triggers.BETWEEN_KILLS_S)
        kill_broker(target)
        time.sleep(triggers.TAIL_S)
    finally:
        feed.halt.set()
        feed.join(triggers.FLUSH_S + 10)
        target.trigger_jobs.update(feed.matching)
    target.note(f"the source fed {feed.delivered} records at {feed.rate}/s: "
                f"{len(feed.matching)} matching, {feed.skipped} not, "
                f"{len(feed.unparseable)} unparseable")  # fmt: skip
    if feed.error is not None:
        raise feed.error


def _items_ended(target: Target) -> int:
    statuses = read_statuses(target.settings, owner=workflows.OWNER)
    return sum(1 for status in statuses.values()
               if (status.step or "").startswith("map[") and status.state == "SUCCEEDED")


_AFTER_A_RUN = "the first of the two workers to finish a run, just after it did"

SCENARIOS: dict[str, Scenario] = {scenario.name: scenario for scenario in (
    Scenario("kill-timers", "SIGKILL the timer processor, start it again 2 s later (same "
             "instance id and state folder).", kill_and_restart("timers")),
    Scenario("kill-status-processor", "SIGKILL the status processor, start it again 2 s "
             "later (same instance id and state folder).", kill_and_restart("status-processor")),
    Scenario("kill-retry-router", "SIGKILL the retry router while a tenth of the jobs fail "
             "their first attempt, start it again 2 s later.", kill_and_restart("retry-router"),
             fail_share=0.1),
    Scenario("kill-worker", f"SIGKILL {_AFTER_A_RUN}, start it again 2 s later with the "
             "same worker id.", kill_worker, lease_s=KILL_LEASE_S,
             heartbeat_s=KILL_HEARTBEAT_S),
    Scenario("kill-worker-replaced", f"SIGKILL {_AFTER_A_RUN}, start a replacement with a "
             "new worker id 2 s later.", kill_and_replace_worker, lease_s=KILL_LEASE_S,
             heartbeat_s=KILL_HEARTBEAT_S),
    Scenario("kill-worker-for-good", f"SIGKILL {_AFTER_A_RUN}; the other takes over.",
             kill_worker_for_good, lease_s=KILL_LEASE_S,
             heartbeat_s=KILL_HEARTBEAT_S),
    Scenario("corrupt-timer-state", "SIGKILL the timers, scribble over their RocksDB files, "
             "start them again 2 s later.", corrupt_timer_state),
    Scenario("delete-timer-state", "SIGKILL the timers, delete their state folders, start "
             "them again 2 s later.", delete_timer_state),
    Scenario("full-state-disk", f"Fill the state folders' disk (a {STATE_DISK_MB} MB tmpfs) "
             f"for {DISK_FULL_S:.0f} s, then free it.", fill_state_disk,
             state_disk_mb=STATE_DISK_MB),
    Scenario("skew-clocks", "Run the timers with their host clock 5 s ahead, the status "
             "processor 5 s behind, one worker 30 s ahead and the other 30 s behind.",
             skewed_clocks, clocks=CLOCK_SKEWS_MS),
    *(Scenario(f"pause-{name}", f"SIGSTOP the {name.replace('-', ' ')} for {PAUSE_S:.0f} s "
               "(past its group session and transaction timeout), then SIGCONT.",
               pause_and_resume(name))
      for name in ("timers", "status-processor", "retry-router")),
    Scenario("pause-worker", f"SIGSTOP {_AFTER_A_RUN}, for {PAUSE_S:.0f} s (lease "
             f"{PAUSE_LEASE_S:.0f} s, heartbeat {PAUSE_HEARTBEAT_S:.0f} s), then SIGCONT: a "
             "zombie, which must stop its runs itself.", pause_worker, lease_s=PAUSE_LEASE_S,
             heartbeat_s=PAUSE_HEARTBEAT_S, long_share=LONG_SHARE),
    Scenario("cut-off-worker", f"Cut {_AFTER_A_RUN} off the network for {PAUSE_S:.0f} s "
             f"(lease {PAUSE_LEASE_S:.0f} s, heartbeat {PAUSE_HEARTBEAT_S:.0f} s): its runs go "
             "on, unheard, and must stop before their retries start.", cut_off_worker,
             lease_s=PAUSE_LEASE_S, heartbeat_s=PAUSE_HEARTBEAT_S, long_share=LONG_SHARE,
             cuts_worker=True),
    Scenario("kill-broker", "SIGKILL the Kafka node leading most partitions (of 3), start "
             f"it again {BROKER_DOWN_S:.0f} s later.", kill_broker, nodes=3),
    Scenario("pause-broker", "SIGSTOP the Kafka node leading most partitions (of 3) for "
             f"{BROKER_DOWN_S:.0f} s, then SIGCONT.", pause_broker, nodes=3),
    Scenario("cut-off-broker", "Cut the Kafka node leading most partitions (of 3) off the "
             f"network, from clients and the other nodes alike, for {BROKER_DOWN_S:.0f} s.",
             cut_off_broker, nodes=3, cuts_network=True),
    Scenario("workflows", f"Submit {workflows.WORKFLOWS} workflows (a map, a wait, a sleep "
             "and a join each) among the load; SIGKILL the timers while their maps run, "
             f"signal the waits, SIGKILL {_AFTER_A_RUN}; each is started again 2 s later.",
             workflows_under_kills, lease_s=KILL_LEASE_S, heartbeat_s=KILL_HEARTBEAT_S),
    Scenario("triggers", f"Feed a trigger's source at {triggers.RATE} records/s (half "
             f"matching, 1 in {triggers.UNPARSEABLE_EVERY} not JSON) among the load; SIGKILL "
             "the trigger processor (started again 2 s later), then the Kafka node leading "
             f"most partitions (of 3, started again {BROKER_DOWN_S:.0f} s later).",
             triggers_under_kills, nodes=3, triggers=True),
    Scenario("poison-kill", f"Submit {POISON_JOBS} jobs whose handler SIGKILLs its worker at "
             "once; a worker that dies is started again at once.", submit_poison("kill"),
             lease_s=KILL_LEASE_S, heartbeat_s=KILL_HEARTBEAT_S,
             poison=Poison("kill", "DEAD_LETTERED", POISON_ATTEMPTS)),
    Scenario("poison-kill-mid-run", f"Submit {POISON_JOBS} jobs whose handler SIGKILLs its "
             "worker 0.5 s into its run; a worker that dies is started again at once.",
             submit_poison("kill-mid-run"), lease_s=KILL_LEASE_S,
             heartbeat_s=KILL_HEARTBEAT_S,
             poison=Poison("kill-mid-run", "DEAD_LETTERED", POISON_ATTEMPTS)),
    Scenario("poison-hang", f"Submit {POISON_JOBS} jobs whose handler never returns (timeout "
             f"{HANG_TIMEOUT_MS / 1000:g} s), to workers running handlers in child processes.",
             submit_poison("hang"), isolation="process",
             poison=Poison("hang", "DEAD_LETTERED", POISON_ATTEMPTS)),
    Scenario("poison-cancel", f"Submit {POISON_JOBS} jobs that run until cancelled, and "
             "cancel each once it runs.", submit_poison("cancel"),
             poison=Poison("cancel", "CANCELLED", 1)),
)}  # fmt: skip
"""Scenario name -> scenario, in the order ``--scenario all`` runs them."""
