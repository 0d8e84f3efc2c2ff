"""Runs as intervals read from jobs.events, and how many of them overlap at once."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

ENDS = frozenset({"SUCCEEDED", "FAILED", "TIMED_OUT"})
"""The kinds a worker reports a run's end with."""


def most_at_once(intervals: Iterable[tuple[int, int]]) -> int:
    """The most half-open intervals [start, end) covering one instant: a run that ends at
    the millisecond another starts does not overlap it."""
    edges = sorted(edge for start, end in intervals for edge in ((start, 1), (end, -1)))
    running = peak = 0
    for _, step in edges:  # -1 sorts before +1 at the same instant
        running += step
        peak = max(peak, running)
    return peak


class Runs:
    """The runs on jobs.events: per worker, the open ones and the ended ones."""

    def __init__(self, events: Iterable[dict[str, Any]] = ()) -> None:
        self.open: dict[str, dict[str, int]] = defaultdict(dict)
        """worker -> execution id -> start (ms)"""
        self.ended: list[tuple[str, int, int]] = []
        """(worker, start, end)"""
        self.add(events)

    def add(self, events: Iterable[dict[str, Any]]) -> None:
        for event in events:
            worker_id, kind = event.get("worker_id"), event["kind"]
            if worker_id is None:
                continue
            if kind == "STARTED":
                self.open[worker_id][event["execution_id"]] = event["at_ms"]
            elif kind in ENDS:
                start = self.open[worker_id].pop(event["execution_id"], None)
                assert start is not None, f"an end with no STARTED before it: {event}"
                self.ended.append((worker_id, start, event["at_ms"]))

    @property
    def intervals(self) -> list[tuple[int, int]]:
        return [(start, end) for _, start, end in self.ended]
