"""The stack supervises its processes: one that dies is started again, with a backoff."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from jobstream._ops.kafka.ports import free_base_port
from jobstream._ops.stack import Component, RestartBackoff, Stack, components
from jobstream._pipeline.topics import Topics
from tests.support.pipeline import process_env
from tests.support.waiting import wait_for


def test_the_backoff_restarts_at_once_then_doubles_and_settles() -> None:
    backoff = RestartBackoff(first_s=1, max_s=4, settle_s=60)
    assert backoff.delay_s("timers", now=0) == 0
    assert [backoff.delay_s("timers", now=t) for t in (1, 3, 7, 13)] == [1, 2, 4, 4]
    assert backoff.delay_s("worker", now=13) == 0, "each component has its own"
    assert backoff.delay_s("timers", now=100) == 0, "a process that ran a while starts at once"


def test_a_killed_process_is_started_again_and_healthy(topics: Topics, tmp_path: Path) -> None:
    stack = Stack(tmp_path, process_env(topics.settings))
    port = free_base_port(1)
    stack.start([Component("retry-router", ("retry-router", "--instance-id", "0"), port)])
    stop = threading.Event()
    exits: list[tuple[str, int]] = []
    supervisor = threading.Thread(
        target=stack.supervise, args=(stop, lambda name, code, _: exits.append((name, code))),
        daemon=True,
    )  # fmt: skip
    supervisor.start()
    try:
        first = stack.processes["retry-router"][1]
        first.kill()
        wait_for(lambda: exits, timeout_s=30, what="the supervisor seeing the exit")
        assert exits == [("retry-router", -9)]
        wait_for(lambda: stack.processes["retry-router"][1].pid != first.pid, timeout_s=30,
                 what="a new retry-router process")  # fmt: skip
        stack.wait_healthy(60)
        assert stack.exited() == {}
    finally:
        stop.set()
        supervisor.join(10)
        stack.stop()


def test_what_no_start_waits_on_runs_nicer_than_the_start_path(topics: Topics,
                                                              tmp_path: Path) -> None:  # fmt: skip
    stack = Stack(tmp_path, process_env(topics.settings))
    chosen = ("timers", "retry-router")
    stack.start([part for part in components(free_base_port(3), job_types=())
                 if part.name in chosen])  # fmt: skip
    try:
        stack.wait_healthy(60)
        niceness = {name: os.getpriority(os.PRIO_PROCESS, stack.processes[name][1].pid)
                    for name in chosen}  # fmt: skip
        own = os.getpriority(os.PRIO_PROCESS, 0)  # what the stack's processes start at
        assert niceness == {"timers": own, "retry-router": max(10, own)}
    finally:
        stack.stop()
