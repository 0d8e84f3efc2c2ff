"""The transactions of several lanes at once.

Each lane (one job type) commits with a transactional producer of its own, and a commit
waits a round trip to the brokers. One after another, a worker serving 50 types waited 50
round trips for a claim of all of them, and as many for their outcomes: at the top of the
hour most of its time went to those waits (docs/benchmarks.md, "The top of the hour").
Here the lanes' commits wait together, each on a thread of a small pool, while the loop
waits for all of them; no lane is touched by two threads, and the loop touches none until
they are done. One lane commits on the loop's own thread, as before.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from typing import TypeVar

T = TypeVar("T")

THREADS_MOST = 8
"""Commits waiting at once, at most."""


class Together:
    def __init__(self, threads: int = THREADS_MOST) -> None:
        self._threads = threads
        self._pool: ThreadPoolExecutor | None = None

    def each(self, items: Sequence[T], act: Callable[[T], object]) -> None:
        """``act`` on every item, at once when there are several; the first error raised
        is raised here once every act has ended."""
        if len(items) < 2:
            for item in items:
                act(item)
            return
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self._threads, thread_name_prefix="lane-commit")
        futures = [self._pool.submit(act, item) for item in items]
        wait(futures)  # all of them, failed or not: the loop touches no lane before
        for future in futures:
            future.result()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
