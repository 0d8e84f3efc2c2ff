"""Alarms: each function called once, at its instant or just after, in instant order."""

from __future__ import annotations

import threading

from jobstream._pipeline.clock import now_ms
from jobstream._pipeline.worker.alarms import Alarms


def test_each_call_comes_at_its_instant_in_order_and_a_closed_one_calls_no_more() -> None:
    alarms = Alarms()
    calls: list[tuple[str, int]] = []
    done = threading.Event()
    base = now_ms()
    for name, after in (("late", 300), ("early", 100), ("middle", 200)):
        alarms.add(base + after, lambda name=name: calls.append((name, now_ms())))
    alarms.add(base + 400, done.set)
    alarms.add(base + 60_000, lambda: calls.append(("never", now_ms())))
    assert done.wait(10)
    assert [name for name, _ in calls] == ["early", "middle", "late"]
    for (_, at), after in zip(calls, (100, 200, 300), strict=True):
        assert at >= base + after
    alarms.close()
    assert [name for name, _ in calls] == ["early", "middle", "late"]
