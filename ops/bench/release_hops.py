"""Where a release's time goes: the hops from a parent's end to its child's start.

Each hop is read off two instants of the same machine's clock (the benchmark runs every
process on one host), for a child and the parent that ended last:

- ``worker_commit``: the parent's SUCCEEDED ``at_ms`` to its record's Kafka timestamp:
  the worker's commit schedule;
- ``status``: to the StepEnded record's timestamp: the worker's commit, the status
  processor's fetch and its commit schedule;
- ``timers_read``: to the child's SCHEDULED ``at_ms``: the status processor's commit, the
  timers' fetch;
- ``timers_commit``: to the child's FIRED record's timestamp: the timers' tick and
  firing, up to their commit;
- ``worker_start``: to the child's first STARTED ``at_ms``: the timers' commit, the
  worker's fetch and its queue.

A record's Kafka timestamp is its producer's clock at ``produce()``: for the
transactional producers here, as their commit began (``LOGGED_AT`` in events.py).
Pure, but for :func:`step_ended_logged`, which reads jobs.intake.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from itertools import pairwise
from typing import Any

from jobstream._ops.bench.events import LOGGED_AT
from jobstream._ops.bench.measure import summarize
from jobstream._pipeline.config import Settings
from jobstream._pipeline.kafka.scan import TopicScan
from jobstream._pipeline.serde import make_serde
from jobstream._pipeline.topics import Topics

HOPS = ("worker_commit", "status", "timers_read", "timers_commit", "worker_start")


def step_ended_logged(settings: Settings) -> dict[str, int]:
    """The Kafka timestamp of the first StepEnded of each job on jobs.intake."""
    _, deserialize = make_serde(settings.schema_registry_url)
    logged: dict[str, int] = {}
    with TopicScan(settings, Topics(settings).intake) as scan:
        for batch in scan:
            for message in batch:
                event = deserialize(message.value())
                if event.name == "StepEnded":
                    logged.setdefault(str(event.data["job_id"]), message.timestamp()[1])
    return logged


def release_hops(parents: Mapping[str, Sequence[str]], events: Iterable[Mapping[str, Any]],
                 step_ended: Mapping[str, int]) -> dict[str, Any]:  # fmt: skip
    """Each hop's summary (ms, under :func:`hop_key`) over the children whose instants
    are all known, and how fast the children started (``children_start_per_s``)."""
    first: dict[tuple[str, str], Mapping[str, Any]] = {}
    last_success: dict[str, Mapping[str, Any]] = {}
    for event in events:
        job_id, kind = str(event["job_id"]), event["kind"]
        if kind == "SUCCEEDED":
            known = last_success.get(job_id)
            if known is None or event["at_ms"] >= known["at_ms"]:
                last_success[job_id] = event
        elif kind in ("SCHEDULED", "FIRED", "STARTED"):
            known = first.get((job_id, kind))
            if known is None or event["at_ms"] < known["at_ms"]:
                first[(job_id, kind)] = event
    hops: dict[str, list[int]] = {hop: [] for hop in HOPS}
    starts: list[int] = []
    for child, its_parents in parents.items():
        scheduled, fired = first.get((child, "SCHEDULED")), first.get((child, "FIRED"))
        started = first.get((child, "STARTED"))
        if started is not None:
            starts.append(int(started["at_ms"]))
        ends = [last_success[p] for p in its_parents if p in last_success]
        if len(ends) < len(its_parents) or not (scheduled and fired and started):
            continue
        parent = max(ends, key=lambda end: int(end["at_ms"]))
        announced = step_ended.get(str(parent["job_id"]))
        if announced is None:
            continue
        instants = (parent["at_ms"], parent[LOGGED_AT], announced, scheduled["at_ms"],
                    fired[LOGGED_AT], started["at_ms"])  # fmt: skip
        for hop, (a, b) in zip(HOPS, pairwise(instants), strict=True):
            hops[hop].append(int(b) - int(a))
    span_s = (max(starts) - min(starts)) / 1000 if len(starts) > 1 else 0.0
    return {
        **{hop_key(hop): summarize(values) for hop, values in hops.items()},
        "children_start_per_s": len(starts) / span_s if span_s else None,
    }


def hop_key(hop: str) -> str:
    """The report's key of a hop's summary."""
    return f"release_hop_{hop}_ms"
