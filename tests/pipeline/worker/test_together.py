"""The lanes' commits waited for together (pipeline/worker/together.py)."""

from __future__ import annotations

import threading
import time

import pytest

from jobstream._pipeline.worker.together import Together

pytestmark = pytest.mark.fast


def test_several_acts_wait_at_once_and_one_runs_on_the_callers_thread() -> None:
    together = Together(threads=4)
    barrier = threading.Barrier(4, timeout=10)  # broken unless all four wait at once
    done: list[int] = []
    together.each([1, 2, 3, 4], lambda n: (barrier.wait(), done.append(n)))
    assert sorted(done) == [1, 2, 3, 4]
    threads: list[threading.Thread] = []
    together.each(["one"], lambda _: threads.append(threading.current_thread()))
    assert threads == [threading.current_thread()]
    together.close()


def test_an_error_is_raised_once_every_act_has_ended() -> None:
    together = Together(threads=2)
    ended: list[str] = []

    def act(name: str) -> None:
        if name == "bad":
            raise RuntimeError("commit failed")
        time.sleep(0.3)  # still committing when the bad one has failed
        ended.append(name)

    with pytest.raises(RuntimeError, match="commit failed"):
        together.each(["bad", "a", "b"], act)
    assert sorted(ended) == ["a", "b"]
    together.close()
