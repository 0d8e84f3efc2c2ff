"""A run's children (``ctx.spawn``), from its handler to the worker's next transaction.

``ctx.spawn`` (pipeline/worker/context.py) builds each child's JobSubmitted in the
handler's own process, under the submission rules (pipeline/worker/spawn_record.py), and
hands it to the context's ``spawn_sink`` as a :class:`Spawned`. In a worker the sink is the
run's :class:`SpawnBox`; a process-isolated handler's child process sends it across the
pipe first, as it does a progress report (pipeline/worker/child.py). The worker's loop
takes what waits in the box at each turn into the run's lane's next transaction, hurried
(pipeline/worker/supervisor.py), and what is left when the run's outcome is decided goes
in before that outcome: a run's children are on jobs.intake at the latest in the
transaction of its outcome, and never without the records that transaction commits.

Exactly once: a child's job id derives from the run's workflow, its step and the spawn's
key (pipeline/workflows/members.py), the key being the one given or the call's ordinal
among the run's spawns without one. A retried run that spawns in the same order (or with
the same keys) spawns the same ids, and the timers drop a JobSubmitted whose id the
workflow already holds. Within one run a key is spawned once: a second spawn of it raises
(:class:`SpawnLedger`), since it could carry other parameters than the first.

Plain values and a lock only: a handler's child process imports this module.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

from jobstream._pipeline.errors import ValidationError

if TYPE_CHECKING:  # a handler's child process imports this module, not the records
    from jobstream._pipeline.model.records import JobSubmitted

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Spawned:
    """One child a run spawned, as its JobSubmitted for jobs.intake. Frozen, without slots:
    it crosses a child process's pipe pickled."""

    key: str
    """The spawn's key within the run: the one given, or its ordinal (``"0"``, ``"1"``...)."""
    job_id: str
    record: JobSubmitted


def dropped(spawned: Spawned) -> None:
    """The spawn sink of a context built outside a worker: the child is submitted nowhere
    (the context's ``spawned`` still lists it)."""


class SpawnLedger:
    """The keys one run has spawned, and the ordinal its next spawn without a key takes.

    Thread-safe, but ordinals follow the order of the calls: a handler that spawns from
    several threads gives keys, or its retry may number its children otherwise."""

    __slots__ = ("_children", "_lock", "_next")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._next = 0
        self._children: dict[str, str | None] = {}
        """Key -> the child's job id (None while the spawn of the key is being built)."""

    def take(self, key: str | None) -> str:
        """The key of the next spawn: ``key`` (checked already), or (None) the next
        ordinal. ValidationError naming ``key`` when the run has spawned it already."""
        with self._lock:
            if key is None:
                text = str(self._next)
                self._next += 1
            else:
                text = key
            if text in self._children:
                raise ValidationError(
                    "key", f"{text!r} was spawned already in this run (job "
                    f"{self._children[text]}): give each child a key of its own")  # fmt: skip
            self._children[text] = None
        return text

    def spawned(self, key: str, job_id: str) -> None:
        """The spawn of ``key`` made child ``job_id``."""
        with self._lock:
            self._children[key] = job_id

    def release(self, key: str) -> None:
        """The spawn of ``key`` failed (a bad child): the key is free again. An ordinal is
        not given back: a retry fails at the same call, and numbers the calls after alike."""
        with self._lock:
            self._children.pop(key, None)

    def children(self) -> dict[str, str]:
        """Key -> job id of every child spawned so far, in the order they were spawned."""
        with self._lock:
            return {key: job_id for key, job_id in self._children.items() if job_id is not None}


class SpawnBox:
    """In the worker: the children a run has spawned, waiting for a transaction.

    :meth:`put` is called from any thread (the handler's, or the one that reads a child
    process's messages); :meth:`take` and :meth:`close` from the worker's loop only."""

    __slots__ = ("_closed", "_lock", "_waiting")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiting: list[Spawned] = []
        self._closed = False

    def put(self, spawned: Spawned) -> None:
        """A child the handler spawned. After its run's outcome was decided (a handler
        still running past its timeout or its cancel) it is dropped: the run's end has
        left, and its retry, if any, spawns the same child again."""
        with self._lock:
            if not self._closed:
                self._waiting.append(spawned)
                return
        log.warning("a child spawned after its run ended is not submitted",
                    extra={"job_id": spawned.job_id, "key": spawned.key})  # fmt: skip

    def take(self) -> list[Spawned]:
        """The children waiting, in the order they were spawned. Read without the lock
        first: one put meanwhile is taken on the loop's next turn."""
        if not self._waiting:
            return []
        with self._lock:
            waiting, self._waiting = self._waiting, []
        return waiting

    def close(self) -> list[Spawned]:
        """The run's outcome is decided: the children still waiting, and none from now on."""
        with self._lock:
            self._closed = True
            waiting, self._waiting = self._waiting, []
        return waiting
