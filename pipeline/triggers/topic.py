"""The triggers on jobs.triggers: define, remove and list them, and follow them live.

jobs.triggers is compacted, one partition, keyed by :attr:`Trigger.id` (owner, name): its
latest record per key is the trigger in force, a tombstone removes it
(pipeline/kafka/follow.py). Every trigger processor reads it whole before it reads any
source, then follows it: a change applies within a poll (0.5 s), with no restart.
"""

from __future__ import annotations

from confluent_kafka import Message

from jobstream._pipeline.config import Settings
from jobstream._pipeline.errors import ValidationError
from jobstream._pipeline.kafka.follow import (
    TopicFollower,
    apply_setting,
    read_settings_topic,
    write_setting,
)
from jobstream._pipeline.topics import Topics
from jobstream._pipeline.triggers.board import TriggerBoard
from jobstream._pipeline.triggers.model import Trigger, trigger_id


def define_trigger(settings: Settings, trigger: Trigger) -> None:
    write_setting(settings, Topics(settings).triggers, trigger.id, trigger.encode())


def remove_trigger(settings: Settings, owner: str, name: str) -> None:
    write_setting(settings, Topics(settings).triggers, trigger_id(owner, name), None)


def read_triggers(settings: Settings, owner: str | None = None) -> list[Trigger]:
    """The triggers in force (of ``owner``, when given): jobs.triggers read to its end."""
    board = TriggerBoard()
    read_settings_topic(settings, Topics(settings).triggers, lambda message: apply(board, message))
    found = sorted(board.snapshot.triggers.values(), key=lambda t: (t.owner, t.name))
    return [t for t in found if owner is None or t.owner == owner]


def find_trigger(settings: Settings, owner: str, name: str) -> Trigger | None:
    return next((t for t in read_triggers(settings, owner) if t.name == name), None)


def apply(board: TriggerBoard, message: Message) -> None:
    """One jobs.triggers record onto ``board``; one that is not a trigger (or no longer
    passes the rules, or is keyed other than by its owner and name, which its tombstone
    would then miss) is logged and skipped."""
    apply_setting(message, key=str, decode=Trigger.decode,
                  set_to=lambda key, trigger: board.set(_keyed(key, trigger)), clear=board.clear)


def _keyed(key: str, trigger: Trigger) -> Trigger:
    if key != trigger.id:
        raise ValidationError("key", f"{key!r} is not the key of trigger {trigger.label} "
                              f"({trigger.id!r})")  # fmt: skip
    return trigger


class TriggersFollower(TopicFollower):
    """Keeps a :class:`TriggerBoard` equal to jobs.triggers, on a daemon thread."""

    def __init__(self, settings: Settings, board: TriggerBoard) -> None:
        super().__init__(settings, Topics(settings).triggers, lambda m: apply(board, m),
                         board.ready, what="triggers")  # fmt: skip
        self.board = board
