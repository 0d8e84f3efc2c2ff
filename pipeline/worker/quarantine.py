"""A run whose last attempt's process died under it runs alone.

A handler that kills its process (a segfault in native code, the OOM killer, ``os._exit``)
takes down every run that shared the process with it. Each of those runs ends LOST when
its lease passes, and each is retried: nobody can tell the culprit from its neighbours.
So the worker treats every such retry as a suspect and gives it the process to itself: it
waits for the runs in hand to end, starts the suspect, and starts nothing else until the
suspect ends. A suspect that kills the process again takes only itself down; a neighbour
that was innocent runs a second time and succeeds. The poison job thus spends its
attempts one by one and reaches its dead-letter topic, and no other job runs more than
twice (docs/reliability.md, "A handler that kills its worker").

Pure bookkeeping, no Kafka: the loop asks :meth:`Quarantine.admit` for each record it
picked and starts only what is admitted.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar

from jobstream._pipeline.model.lifecycle import PROCESS_DIED
from jobstream._pipeline.model.records import ExecutionRequested

T = TypeVar("T")


def is_suspect(execution: ExecutionRequested) -> bool:
    """Whether the attempt before this one ended with its process dying under it."""
    errors = execution.errors
    return bool(errors) and errors[-1].error_type in PROCESS_DIED


@dataclass(slots=True)
class Quarantine(Generic[T]):
    """At most one suspect held back, and the run token of the suspect running alone."""

    held: T | None = None
    """A suspect picked while other runs held slots: it starts once they have ended."""
    alone: str | None = None
    """The execution id of the suspect running alone; nothing starts beside it."""

    def blocks(self, running: Mapping[str, object]) -> bool:
        """Whether nothing may start now: a suspect runs, or one waits for the others.
        ``running``: the runs whose outcome is still to come, by execution id (a timed-out
        sync handler that never returns does not hold the quarantine for ever)."""
        if self.alone is not None and self.alone not in running:
            self.alone = None
        return self.alone is not None or (self.held is not None and bool(running))

    def take_held(self, running: Mapping[str, object]) -> T | None:
        """The suspect held back, once no run is left beside which it would start."""
        if self.held is None or running:
            return None
        held, self.held = self.held, None
        return held

    def hold(self, picked: T) -> None:
        self.held = picked
