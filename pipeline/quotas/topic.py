"""The owners' quotas on jobs.quotas: set, clear and list them, and follow them from the
API (pipeline/kafka/follow.py: a change applies within half a second, with no restart)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping

from confluent_kafka import Message

from jobstream._pipeline.config import Settings
from jobstream._pipeline.errors import ValidationError
from jobstream._pipeline.kafka.follow import (
    TopicFollower,
    apply_setting,
    read_settings_topic,
    track_setters,
    write_setting,
)
from jobstream._pipeline.model import rules
from jobstream._pipeline.model.rules import field_check
from jobstream._pipeline.quotas.model import Quota
from jobstream._pipeline.topics import Topics

log = logging.getLogger(__name__)


class QuotaBoard:
    """The owners' overrides in force, replaced whole by the follower, read by requests."""

    def __init__(self, overrides: Mapping[str, Quota] | None = None) -> None:
        self._overrides: Mapping[str, Quota] = dict(overrides or {})
        self._lock = threading.Lock()
        self.ready = threading.Event()
        self.ready.set()

    @property
    def overrides(self) -> Mapping[str, Quota]:
        return self._overrides

    def set(self, owner: str, quota: Quota) -> None:
        with self._lock:
            self._overrides = {**self._overrides, owner: quota}

    def clear(self, owner: str) -> None:
        with self._lock:
            self._overrides = {k: v for k, v in self._overrides.items() if k != owner}


def check_owner(owner: str) -> str:
    field_check("owner", rules.owner, owner)
    return owner


def set_quota(settings: Settings, owner: str, quota: Quota, *, set_by: str | None = None) -> None:
    """Replace ``owner``'s override: the quotas ``quota`` leaves None take the defaults."""
    if quota.is_empty:
        raise ValidationError("quota", "sets no quota (clear the owner's override instead)")
    write_setting(settings, Topics(settings).quotas, check_owner(owner), quota.encode(),
                  set_by=set_by)  # fmt: skip


def clear_quota(settings: Settings, owner: str, *, set_by: str | None = None) -> None:
    write_setting(settings, Topics(settings).quotas, check_owner(owner), None, set_by=set_by)


def read_quotas(settings: Settings) -> dict[str, Quota]:
    """The overrides in force, by owner: jobs.quotas read to its end."""
    return {owner: quota for owner, (quota, _) in read_quotas_set_by(settings).items()}


def read_quotas_set_by(settings: Settings) -> dict[str, tuple[Quota, str | None]]:
    """The overrides in force, by owner, each with who set it."""
    board = QuotaBoard()
    setters: dict[str, str | None] = {}
    read_settings_topic(settings, Topics(settings).quotas,
                        track_setters(setters, lambda message: apply(board, message)))  # fmt: skip
    return {owner: (quota, setters.get(owner)) for owner, quota in sorted(board.overrides.items())}


def apply(board: QuotaBoard, message: Message) -> None:
    """One jobs.quotas record onto ``board``; one that is not a quota is logged and skipped."""
    apply_setting(message, key=check_owner, decode=Quota.decode, set_to=board.set,
                  clear=board.clear)


class QuotasFollower(TopicFollower):
    """Keeps a :class:`QuotaBoard` equal to jobs.quotas, on a daemon thread."""

    def __init__(self, settings: Settings, board: QuotaBoard) -> None:
        super().__init__(settings, Topics(settings).quotas, lambda m: apply(board, m),
                         board.ready, what="quotas")  # fmt: skip
        self.board = board
