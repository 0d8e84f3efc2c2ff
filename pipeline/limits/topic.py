"""The limits on jobs.limits: set, clear and list them, and follow them from a timer process.

jobs.limits is compacted, one partition, keyed by :attr:`LimitKey.id`: its latest record
per key is the limit in force, a tombstone clears it (pipeline/kafka/follow.py). Every
timer process reads it whole on a thread of its own while it joins its group, and fires
nothing before it has (the board's ``ready``), then follows it: a change applies within a
poll (0.5 s) in every process.
"""

from __future__ import annotations

import logging

from confluent_kafka import Message

from jobstream._pipeline.config import Settings
from jobstream._pipeline.kafka.follow import (
    TopicFollower,
    apply_setting,
    read_settings_topic,
    track_setters,
    write_setting,
)
from jobstream._pipeline.limits.model import Limit, LimitKey
from jobstream._pipeline.limits.throttle import LimitBoard
from jobstream._pipeline.topics import Topics

log = logging.getLogger(__name__)


def set_limit(settings: Settings, limit: Limit, *, set_by: str | None = None) -> None:
    write_setting(settings, Topics(settings).limits, limit.key.id, limit.encode(), set_by=set_by)


def clear_limit(settings: Settings, key: LimitKey, *, set_by: str | None = None) -> None:
    write_setting(settings, Topics(settings).limits, key.id, None, set_by=set_by)


def read_limits(settings: Settings) -> list[Limit]:
    """The limits in force: jobs.limits read to its end."""
    return [limit for limit, _ in read_limits_set_by(settings)]


def read_limits_set_by(settings: Settings) -> list[tuple[Limit, str | None]]:
    """The limits in force, each with who set it (pipeline/kafka/follow.py's header)."""
    board = LimitBoard()
    setters: dict[str, str | None] = {}
    read_settings_topic(settings, Topics(settings).limits,
                        track_setters(setters, lambda message: apply(board, message)))  # fmt: skip
    return [(limit, setters.get(limit.key.id))
            for limit in sorted(board.limits.values(), key=lambda limit: str(limit.key))]


def apply(board: LimitBoard, message: Message) -> None:
    """One jobs.limits record onto ``board``; a record that is not a limit is logged and
    skipped (the rest still apply)."""
    apply_setting(message, key=LimitKey.from_id, decode=Limit.decode,
                  set_to=lambda _key, limit: board.set(limit), clear=board.clear)


class LimitsFollower(TopicFollower):
    """Keeps a :class:`LimitBoard` equal to jobs.limits, on a daemon thread."""

    def __init__(self, settings: Settings, board: LimitBoard) -> None:
        super().__init__(settings, Topics(settings).limits, lambda m: apply(board, m),
                         board.ready, what="rate limits")  # fmt: skip
        self.board = board
