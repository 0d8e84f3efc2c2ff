"""One thread that calls each function given to it at its instant (epoch ms, this host's
clock): how the executor starts a sync run claimed ahead of its due instant without a
handler thread sleeping for each (pipeline/worker/executor.py)."""

from __future__ import annotations

import heapq
import threading
from collections.abc import Callable
from itertools import count

from jobstream._pipeline.clock import now_ms, seconds_until


class Alarms:
    def __init__(self, name: str = "jobstream-alarms") -> None:
        self._heap: list[tuple[int, int, Callable[[], None]]] = []
        self._order = count()
        self._changed = threading.Condition()
        self._closed = False
        self._thread = threading.Thread(target=self._serve, daemon=True, name=name)
        self._thread.start()

    def add(self, at_ms: int, call: Callable[[], None]) -> None:
        with self._changed:
            heapq.heappush(self._heap, (at_ms, next(self._order), call))
            if self._heap[0][2] is call:  # a new first instant: the thread waits less
                self._changed.notify()

    def close(self) -> None:
        """Stop; what has not come due is dropped."""
        with self._changed:
            self._closed = True
            self._changed.notify()

    def _serve(self) -> None:
        while True:
            with self._changed:
                while not self._closed and (not self._heap or self._heap[0][0] > now_ms()):
                    self._changed.wait(seconds_until(self._heap[0][0]) if self._heap else None)
                if self._closed:
                    return
                due = []
                while self._heap and self._heap[0][0] <= now_ms():
                    due.append(heapq.heappop(self._heap)[2])
            for call in due:
                call()
