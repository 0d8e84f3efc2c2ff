"""SIGSTOP and SIGCONT of a run's processes and broker nodes, with a note of what is
stopped, so that a run never ends with something left stopped (it could not drain)."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from typing import Generic, TypeVar

K = TypeVar("K", int, str)


class Pauses(Generic[K]):
    """Stop and continue by key (a node id, a component name), the pid looked up each time."""

    def __init__(self, pid_of: Callable[[K], int]) -> None:
        self._pid_of: Callable[[K], int] = pid_of
        self._stopped: set[K] = set()

    def __contains__(self, key: K) -> bool:
        return key in self._stopped

    def pause(self, key: K) -> int:
        pid = self._pid_of(key)
        os.kill(pid, signal.SIGSTOP)
        self._stopped.add(key)
        return pid

    def resume(self, key: K) -> None:
        os.kill(self._pid_of(key), signal.SIGCONT)
        self._stopped.discard(key)

    def resume_all(self, gone: type[Exception] | None = None) -> None:
        """Continue everything still stopped; a key whose process is ``gone`` (its pid
        lookup raises that) is forgotten."""
        for key in sorted(self._stopped):
            try:
                self.resume(key)
            except Exception as exc:
                if gone is None or not isinstance(exc, gone):
                    raise
                self._stopped.discard(key)
