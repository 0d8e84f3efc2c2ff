"""The failover scenario: a primary region lost, the pipeline started on its standby, and
a failback.

1. Start two one-node clusters (primary and standby), the same topics on both, and
   MirrorMaker 2 from the primary to the standby (ops/kafka/mirror.py).
2. Start the pipeline on the primary and submit the load there (ops/faults/load.py).
3. Once a third of the window has passed, lose the primary: SIGKILL its Kafka node, then
   its pipeline, then the MirrorMaker (its source is gone).
4. Fail over: read which submissions reached the standby (what async replication lost),
   fail the client over (it submits again every job it sent in the last
   ``resubmit_s`` before the loss: the same ids, harmless where they arrived), and start
   the pipeline on the standby, fresh state folders. The RTO is from the kill to the
   first job fired by the standby's timers.
5. With ``failback_jobs``: rebuild the primary (a new, empty cluster) and mirror the
   standby back to it, both while the standby takes over; then submit jobs due after the
   switch, stop the standby's pipeline, wait until the mirror and the groups' offsets have
   caught up, and start the pipeline on the primary again with the state folders it had
   (they follow the lost cluster: rebuilt from the changelog). Every failback job must
   fire once, none be lost.

Lost, run twice and flagged are counted as every fault run counts them (ops/faults/tally.py),
over both regions' jobs.events and the one handler-side record.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jobstream._ops.faults.journal import read_runs
from jobstream._ops.faults.load import Load, Submitter
from jobstream._ops.faults.observer import EventsObserver, Seen
from jobstream._ops.faults.region import Region
from jobstream._ops.faults.tally import run_more_than_once, tally
from jobstream._ops.kafka.mirror import (
    Flow,
    Mirror,
    offsets_not_synced,
    records_behind,
    rewind_group,
    timers_inputs,
)
from jobstream._pipeline.clock import now_ms
from jobstream._pipeline.config import Settings
from jobstream._pipeline.errors import JobstreamError
from jobstream._pipeline.kafka.scan import TopicScan
from jobstream._pipeline.serde import make_serde
from jobstream._pipeline.topics import Topics

log = logging.getLogger(__name__)

Say = Callable[[str], object]
CAUGHT_UP_TIMEOUT_S = 60.0
"""How long a planned switch waits for the mirror and the groups' offsets."""
REBUILD_TIMEOUT_S = 300.0
"""How long the failback waits for the lost region's new cluster and its mirror."""


@dataclass(frozen=True)
class FailoverOptions:
    jobs: int = 1000
    window_s: float = 30.0
    lead_s: float = 5.0
    loss_after_s: float = 10.0
    """The primary is lost this long after the first job fell due."""
    resubmit_s: float = 10.0
    """The client submits again to the standby every job it sent this long before the loss."""
    distrust_s: float = 15.0
    """The standby's timers do not trust the markers of jobs fired this long before the
    loss (JOBSTREAM_MARKERS_TRUSTED_BEFORE): their executions may not have been copied."""
    rewind_s: float = 30.0
    """The standby's timers read again what was submitted this long before the loss."""
    deadline_s: float = 120.0
    """How long to wait for the jobs past the last due time."""
    pending_jobs: int = 0
    """Jobs submitted to the primary before the load, due ``pending_after_loss_s`` after
    the loss and never sent again: only the timers' copied changelog can fire them."""
    pending_after_loss_s: float = 15.0
    failback_jobs: int = 0
    """Jobs pending across the failback (none: no failback)."""
    failback_due_s: float = 30.0
    """How long after their submission the failback jobs fall due."""
    heap_mb: int = 512
    """Each Kafka node's heap."""


def run_failover(options: FailoverOptions, workdir: Path,
                 tell: Say = log.info) -> dict[str, Any]:  # fmt: skip
    """Run the scenario in a folder of its own under ``workdir``; its numbers. ``tell``
    hears each step, with the seconds since the start."""
    home = (workdir / f"failover-{time.strftime('%H%M%S')}-{uuid.uuid4().hex[:4]}").resolve()
    home.mkdir(parents=True)
    prefix = f"faults-{uuid.uuid4().hex[:8]}."
    runs_dir = home / "runs"
    primary = Region("primary", home, prefix=prefix, runs_dir=runs_dir, heap_mb=options.heap_mb)
    standby = Region("standby", home, prefix=prefix, runs_dir=runs_dir, heap_mb=options.heap_mb)
    mirrors = [Mirror(home / "mirror"), Mirror(home / "mirror-back")]
    started = time.monotonic()

    def say(line: str) -> object:
        return tell(f"[{time.monotonic() - started:5.1f} s] {line}")

    try:
        say(f"failover: starting two clusters in {home}")
        _together(primary.start_cluster, standby.start_cluster)
        # Left on an error, the executor waits for a rebuild under way before the clean-up.
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="rebuild") as background:
            result = _run(options, primary, standby, mirrors, runs_dir, say, background)
    finally:
        for mirror in mirrors:
            mirror.down(kill=True)
        for region in (primary, standby):
            region.close_observer()
            region.stop()
    return {"scenario": "failover", "jobs": options.jobs, "window_s": options.window_s,
            **result, "seconds": round(time.monotonic() - started, 1),
            "home": str(home)}  # fmt: skip


def _run(options: FailoverOptions, primary: Region, standby: Region, mirrors: list[Mirror],
         runs_dir: Path, say: Say, background: ThreadPoolExecutor) -> dict[str, Any]:  # fmt: skip
    forth = mirrors[0]
    flow = _flow(primary, standby)
    forth.up(flow)
    say(f"failover: mirroring {flow.source} -> {flow.target}; starting the pipeline on the "
        "primary")  # fmt: skip
    primary.start_pipeline()
    seen_primary = primary.observe()
    pending = {}
    if options.pending_jobs:
        due_in_s = options.lead_s + options.loss_after_s + options.pending_after_loss_s
        pending = _submit_pending(primary.settings, options.pending_jobs, due_in_s,
                                  key_prefix=f"{primary.prefix}pending-")  # fmt: skip
    load = Load(options.jobs, round(options.window_s * 1000), round(options.lead_s * 1000))
    t0 = now_ms() + load.lead_ms
    submitter = Submitter(primary.settings, load, t0, key_prefix=primary.prefix)
    submitter.start()
    loss_at = t0 + round(options.loss_after_s * 1000)
    while now_ms() < loss_at:
        seen_primary.poll(0.1)
    lost_ms = now_ms()
    pid = primary.lose()
    forth.down(kill=True)
    submitter.halt.set()
    say(f"failover: lost the primary (SIGKILL Kafka pid {pid}, its pipeline and the mirror) "
        f"{(lost_ms - t0) / 1000:.1f} s after the first due time, "
        f"{len(seen_primary.fired)} jobs fired there")  # fmt: skip
    primary.close_observer()
    # Its last batch waits for a broker that is gone (until its delivery timeout): what
    # it has acknowledged is all it will.
    submitter.join(1)
    acknowledged = dict(submitter.due)
    copied = submitted_ids(standby.settings)
    not_copied = sorted(set(acknowledged) - copied)
    resubmit_from = _first_sent_after(load, t0, lost_ms - round(options.resubmit_s * 1000))
    again = Submitter(standby.settings, load, t0, key_prefix=standby.prefix,
                      first=min(resubmit_from, submitter.next_index))  # fmt: skip
    again.start()
    rebuild: Future[None] | None = None
    if options.failback_jobs:  # the lost region is rebuilt while the standby takes over
        rebuild = background.submit(_rebuild, primary, standby, mirrors[1])
    timers_group = f"{standby.prefix}jobstream.timers"
    bootstrap = standby.settings.bootstrap_servers
    rewound = rewind_group(bootstrap, timers_group, timers_inputs(bootstrap, standby.prefix),
                           lost_ms - round(options.rewind_s * 1000))  # fmt: skip
    trusted_before = lost_ms - round(options.distrust_s * 1000)
    ready_s = standby.start_pipeline({"JOBSTREAM_MARKERS_TRUSTED_BEFORE": str(trusted_before),
                                      "JOBSTREAM_MARKERS_TRUSTED_FROM": str(now_ms())})
    seen_standby = standby.observe()
    say(f"failover: the standby's pipeline ready {ready_s:.1f} s after its start; "
        f"{len(not_copied)} acknowledged submissions had not reached it")  # fmt: skip
    last_due = max(load.due_ms(t0, load.jobs - 1), *pending.values())
    ending = _wait_ended(seen_standby, [seen_primary], {**acknowledged, **pending}, again,
                         last_due + round(options.deadline_s * 1000))  # fmt: skip
    due = {**acknowledged, **again.due, **pending}
    numbers = _numbers(due, [seen_primary, seen_standby], runs_dir, lost_ms)
    numbers["unflagged_ended_before_loss_ms"] = _unflagged_ages(
        due, [seen_primary, seen_standby], runs_dir, lost_ms)
    first_fire = _first_fired_after(seen_standby.seen, lost_ms)
    result: dict[str, Any] = {
        "ending": ending,
        "lost_at_ms": lost_ms,
        "acknowledged_by_primary": len(acknowledged),
        "not_copied_to_standby": len(not_copied),
        "not_copied_window_ms": _window(not_copied, acknowledged, lost_ms, load.lead_ms),
        "resubmitted": len(again.due),
        "timer_partitions_rewound": rewound,
        "standby_ready_ms": round(ready_s * 1000),
        "rto_first_fire_ms": None if first_fire is None else first_fire - lost_ms,
        **numbers,
    }
    if pending:
        held = _numbers(pending, [seen_primary, seen_standby], runs_dir, lost_ms)
        result["pending"] = {key: held[key] for key in ("submitted", "ended", "lost",
                                                        "run_more_than_once")}  # fmt: skip
    if rebuild is not None:
        rebuild.result(timeout=REBUILD_TIMEOUT_S)  # its error, if it failed
        result["failback"] = _failback(options, primary, standby, mirrors[1], runs_dir, say)
    return result


def problems(result: dict[str, Any]) -> list[str]:
    """What makes a failover run fail: a job lost, or not every job ended, in either phase.
    Jobs run twice are the failover's price (docs/reliability.md), counted, not failures."""
    found = []
    for phase, numbers in (("failover", result), ("failback", result.get("failback"))):
        if numbers is None:
            continue
        if numbers["lost"]:
            found.append(f"{phase}: {numbers['lost']} jobs lost")
        if numbers["ending"] != "all ended":
            found.append(f"{phase}: not every job ended before the deadline")
    return found


def _rebuild(region: Region, standby: Region, back: Mirror) -> None:
    """Start the lost region's cluster anew, empty (other ports, another cluster id), and
    mirror the standby to it: the failback's start-up, done while the standby takes over."""
    region.stop()
    region.start_cluster()
    back.up(_flow(standby, region))


def _failback(options: FailoverOptions, primary: Region, standby: Region, back: Mirror,
              runs_dir: Path, say: Say) -> dict[str, Any]:  # fmt: skip
    """Rebuild the primary, mirror the standby back to it, switch with jobs pending."""
    flow = _flow(standby, primary)
    back.up(flow)  # up since the rebuild: this only checks it is the same flow
    say("failback: the standby mirrored to the rebuilt primary; submitting the failback jobs")
    t0 = now_ms() + round(options.failback_due_s * 1000)
    pending = _submit_pending(standby.settings, options.failback_jobs, options.failback_due_s,
                              key_prefix=f"{standby.prefix}back-")  # fmt: skip
    observer = standby.observer
    assert observer is not None
    _wait(lambda: observer.poll(0.1) >= 0 and _scheduled(observer.seen, pending),
          CAUGHT_UP_TIMEOUT_S, "the failback jobs were not all scheduled on the standby")
    switch_ms = now_ms()
    standby.stop_pipeline()
    say(f"failback: standby's pipeline stopped in {(now_ms() - switch_ms) / 1000:.1f} s")
    _wait(lambda: not any(records_behind(flow).values()), CAUGHT_UP_TIMEOUT_S,
          "the mirror back did not catch up")
    say(f"failback: every record copied back {(now_ms() - switch_ms) / 1000:.1f} s after")
    _wait(lambda: not offsets_not_synced(flow), CAUGHT_UP_TIMEOUT_S,
          "the groups' offsets were not copied back")
    back.down()
    caught_up_ms = now_ms()
    say(f"failback: standby stopped and copied back in {(caught_up_ms - switch_ms) / 1000:.1f} "
        "s; starting the pipeline on the primary")  # fmt: skip
    ready_s = primary.start_pipeline()
    seen = primary.observe()
    ending = _wait_ended(seen, [observer], pending, None,
                         t0 + round(options.deadline_s * 1000))  # fmt: skip
    numbers = _numbers(pending, [observer, seen], runs_dir, switch_ms)
    early = {item.event["job_id"] for item in observer.seen
             if item.event["kind"] == "FIRED" and item.event["job_id"] in pending}  # fmt: skip
    return {"ending": ending, "pending_at_switch": len(pending) - len(early),
            "switch_to_copied_ms": caught_up_ms - switch_ms,
            "primary_ready_ms": round(ready_s * 1000), **numbers}  # fmt: skip


def _submit_pending(settings: Settings, jobs: int, due_in_s: float,
                    key_prefix: str) -> dict[str, int]:  # fmt: skip
    """Submit ``jobs`` jobs due over one second, ``due_in_s`` from now, all at once;
    their ids and due times."""
    load = Load(jobs, 1000, round(due_in_s * 1000) + 1000)
    submitter = Submitter(settings, load, now_ms() + round(due_in_s * 1000),
                          key_prefix=key_prefix)  # fmt: skip
    submitter.run()
    if submitter.error is not None:
        raise JobstreamError(f"submitting {jobs} pending jobs failed: {submitter.error!r}")
    return dict(submitter.due)


def _flow(source: Region, target: Region) -> Flow:
    return Flow.of_deployment(source.prefix, source=source.name,
                              source_bootstrap=source.settings.bootstrap_servers,
                              target=target.name,
                              target_bootstrap=target.settings.bootstrap_servers)  # fmt: skip


def _numbers(due: dict[str, int], observers: Iterable[EventsObserver], runs_dir: Path,
             fault_ms: int) -> dict[str, Any]:  # fmt: skip
    """The tally over both regions' events (a copied event counted once)."""
    seen = distinct([item for observer in observers for item in observer.seen])
    runs = read_runs(runs_dir)
    return tally(due, seen, runs, fault_ms=fault_ms, until_ms=now_ms())


def _unflagged_ages(due: dict[str, int], observers: Iterable[EventsObserver], runs_dir: Path,
                    lost_ms: int) -> list[int]:  # fmt: skip
    """For every job run twice that no region flagged, how long before the loss its first
    run ended: a run whose outcome the mirror had not copied yet ends just before it."""
    flagged = {item.event["job_id"] for observer in observers for item in observer.seen
               if item.event["kind"] in ("DUPLICATE", "LOST")}  # fmt: skip
    runs = read_runs(runs_dir)
    unflagged = run_more_than_once(runs, due) - flagged
    first_end: dict[str, int] = {}
    for run in sorted(runs, key=lambda r: r.end_ms):
        first_end.setdefault(run.job_id, run.end_ms)
    return sorted(lost_ms - first_end[job_id] for job_id in unflagged)


def distinct(seen: Iterable[Seen]) -> list[Seen]:
    """The events of ``seen`` once each, in the order first seen: a region reads the
    events the mirror copied from the other as well as its own."""
    found: dict[tuple[Any, ...], Seen] = {}
    for item in sorted(seen, key=lambda s: s.seen_ms):
        event = item.event
        key = (event["job_id"], event["kind"], event["at_ms"], event["execution_id"],
               event["attempt"])  # fmt: skip
        found.setdefault(key, item)
    return list(found.values())


def submitted_ids(settings: Settings, timeout_s: float = 30.0) -> set[str]:
    """The job ids of every JobSubmitted on ``settings``' jobs.intake now (as far as
    ``timeout_s`` allows)."""
    _, deserialize = make_serde(settings.schema_registry_url)
    found: set[str] = set()
    with TopicScan(settings, Topics(settings).intake, timeout_s=timeout_s) as scan:
        for batch in scan:
            for message in batch:
                value = message.value()
                if value:
                    decoded = deserialize(value)
                    if decoded.name == "JobSubmitted":
                        found.add(str(decoded.data["job_id"]))
    return found


def _first_sent_after(load: Load, t0: int, since_ms: int) -> int:
    """The first job the client sent at or after ``since_ms`` (job i is sent a lead
    before it falls due)."""
    for i in range(load.jobs):
        if load.due_ms(t0, i) - load.lead_ms >= since_ms:
            return i
    return load.jobs


def _window(ids: list[str], due: dict[str, int], lost_ms: int, lead_ms: int) -> int | None:
    """How long before the loss the earliest of ``ids`` was sent."""
    return max((lost_ms - (due[i] - lead_ms) for i in ids), default=None)


def _first_fired_after(seen: Iterable[Seen], since_ms: int) -> int | None:
    return min((item.event["at_ms"] for item in seen
                if item.event["kind"] == "FIRED" and item.event["at_ms"] > since_ms),
               default=None)  # fmt: skip


def _scheduled(seen: Iterable[Seen], jobs: dict[str, int]) -> bool:
    return set(jobs) <= {item.event["job_id"] for item in seen
                         if item.event["kind"] == "SCHEDULED"}  # fmt: skip


def _wait_ended(observer: EventsObserver, others: list[EventsObserver], due: dict[str, int],
                submitter: Submitter | None, deadline_ms: int) -> str:  # fmt: skip
    """Read until every job of ``due`` (and of ``submitter``, once it is done) has ended
    in any region, or ``deadline_ms``: ``all ended`` or ``deadline``."""
    ended_before = set().union(*(o.ended for o in others))
    while now_ms() < deadline_ms:
        observer.poll(0.1)
        if submitter is not None and submitter.error is not None:
            raise JobstreamError(f"submitting failed: {submitter.error!r}")
        awaited = set(due) | set(submitter.due if submitter is not None else ())
        if (submitter is None or not submitter.is_alive()) and awaited <= (
                observer.ended | ended_before):
            return "all ended"
    return "deadline"


def _wait(condition: Callable[[], bool], timeout_s: float, failure: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise JobstreamError(f"{failure} within {timeout_s:.0f} s")
        time.sleep(0.5)


def _together(*steps: Callable[[], object]) -> None:
    """Run ``steps`` at once, each on a thread; raise the first error."""
    errors: list[BaseException] = []

    def run(step: Callable[[], object]) -> None:
        try:
            step()
        except BaseException as exc:  # raised below, on the caller's thread
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(step,), daemon=True) for step in steps]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
