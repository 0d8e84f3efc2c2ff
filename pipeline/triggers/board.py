"""The triggers in force, as the processor reads them: a board kept equal to jobs.triggers.

A follower thread (pipeline/triggers/topic.py) writes it; the processor's loop reads it.
Each change replaces the whole snapshot (one assignment), so the loop never sees a board
half changed and needs no lock.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from jobstream._pipeline.triggers.model import Trigger


@dataclass(frozen=True)
class Snapshot:
    triggers: Mapping[str, Trigger] = field(default_factory=dict)
    by_source: Mapping[str, tuple[Trigger, ...]] = field(default_factory=dict)

    @classmethod
    def of(cls, triggers: Mapping[str, Trigger]) -> Snapshot:
        by_source: dict[str, list[Trigger]] = {}
        for trigger in sorted(triggers.values(), key=lambda t: t.id):
            by_source.setdefault(trigger.source, []).append(trigger)
        return cls(MappingProxyType(dict(triggers)),
                   MappingProxyType({k: tuple(v) for k, v in by_source.items()}))  # fmt: skip

    @property
    def sources(self) -> frozenset[str]:
        return frozenset(self.by_source)


class TriggerBoard:
    def __init__(self) -> None:
        self.snapshot = Snapshot()
        self.ready = threading.Event()
        """Set once jobs.triggers has been read to its end: nothing is read from a source
        before (a record would meet no trigger and be passed over for good)."""
        self.version = 0
        """Raised by every change: the processor re-subscribes when its sources differ."""

    def set(self, trigger: Trigger) -> None:
        self._replace({**self.snapshot.triggers, trigger.id: trigger})

    def clear(self, trigger_id: str) -> None:
        triggers = dict(self.snapshot.triggers)
        if triggers.pop(trigger_id, None) is not None:
            self._replace(triggers)

    def _replace(self, triggers: Mapping[str, Trigger]) -> None:
        self.snapshot = Snapshot.of(triggers)
        self.version += 1
