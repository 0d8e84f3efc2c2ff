"""Tenants at the Kafka door: an owner's own intake topic, and what may pass through it.

An owner's principal may write only ``jobs.intake.owner.<owner>`` (its ACL,
ops/kafka/acls.py); the timers read every such topic and pass on to jobs.intake only the
records that name that owner (docs/adr/0010-owner-intake-topics.md). This module holds the
pure rules of that door: the names (topic, principal), the owner a topic belongs to, and
whether a record may pass. No Kafka here.

Kafka does not stamp a producer's principal on its records; the topic is what proves who
wrote a record, since no principal but the owner's (and the super users) may write it.
"""

from __future__ import annotations

import re

from jobstream._pipeline.errors import ValidationError
from jobstream._pipeline.model.collapse import intake_key
from jobstream._pipeline.model.records import (
    JobCancelled,
    JobSubmitted,
    JobTriggered,
    ScheduleChanged,
    WorkflowCancelled,
    WorkflowSignalled,
    WorkflowSubmitted,
)
from jobstream._pipeline.partitioning import partition_key

OWNER_INTAKE = "jobs.intake.owner."
"""The owners' intake topics' common name (after the topic prefix)."""
OWNER_PRINCIPAL = "jobstream-owner-"
_DOOR_OWNER = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,99}")
"""An owner with a door of its own: its name becomes a topic's (Kafka allows letters,
digits, ``.``, ``_`` and ``-``, and takes ``.`` and ``_`` for one another in its metrics, so
no ``.``) and a SCRAM user's."""

PASSING = (JobSubmitted, WorkflowSubmitted, WorkflowSignalled, WorkflowCancelled,
           ScheduleChanged, JobTriggered)  # fmt: skip
"""The records an owner's door takes, each when it names its owner. The rest are refused:
a JobCancelled names a job id and no owner (cancel through the API, which knows whose job
it is), and StepEnded, SingletonEnded and RetryScheduled are the pipeline's own."""


def door_owner(owner: str) -> str:
    """``owner``, checked to be one that can have a door; ValidationError naming it."""
    if not isinstance(owner, str) or not _DOOR_OWNER.fullmatch(owner):
        raise ValidationError("owner", f"{owner!r} cannot have an intake topic of its own: "
                                       "1 to 100 letters, digits, '_' or '-', the first a "
                                       "letter or digit")  # fmt: skip
    return owner


def owner_intake(prefix: str, owner: str) -> str:
    """The intake topic of ``owner``: ``<prefix>jobs.intake.owner.<owner>``."""
    return f"{prefix}{OWNER_INTAKE}{door_owner(owner)}"


def owner_intake_pattern(prefix: str) -> str:
    """The regular expression (librdkafka's ``^`` form) that subscribes to every owner's
    intake topic under ``prefix``."""
    return "^" + re.escape(f"{prefix}{OWNER_INTAKE}") + r"[A-Za-z0-9][A-Za-z0-9_-]*$"


def owner_of_topic(prefix: str, topic: str | None) -> str | None:
    """The owner whose intake topic ``topic`` is; None for any other topic."""
    head = f"{prefix}{OWNER_INTAKE}"
    if topic is None or not topic.startswith(head):
        return None
    owner = topic.removeprefix(head)
    return owner if _DOOR_OWNER.fullmatch(owner) else None


def owner_principal(owner: str) -> str:
    """The SCRAM user of an owner: ``jobstream-owner-<owner>``."""
    return f"{OWNER_PRINCIPAL}{door_owner(owner)}"


def kafka_actor(principal: str) -> str:
    """How a submission names the Kafka principal that sent it (``submitted_by``)."""
    return f"kafka:User:{principal}"


def named_owner(record: object) -> str | None:
    """The owner a record says it acts for; None when it names none."""
    if isinstance(record, JobSubmitted):
        return record.spec.owner
    if isinstance(record, WorkflowSubmitted | WorkflowSignalled | WorkflowCancelled
                  | ScheduleChanged | JobTriggered):  # fmt: skip
        return record.owner
    return None


def refusal(owner: str, record: object) -> str | None:
    """Why ``record``, read on ``owner``'s intake topic, may not pass; None when it may."""
    if not isinstance(record, PASSING):
        name = type(record).__name__
        return (f"{name} is not taken on an owner's intake topic (only "
                f"{', '.join(kind.__name__ for kind in PASSING)})")  # fmt: skip
    named = named_owner(record)
    if named is None:
        return (f"{type(record).__name__} names no owner: on an owner's intake topic a "
                f"record must name its owner ({owner!r})")  # fmt: skip
    if named != owner:
        return (f"the record names owner {named!r}, not {owner!r} whose intake topic it was "
                f"written to: that topic's principal may submit only as {owner!r}")  # fmt: skip
    return None


IntakeRecord = (JobSubmitted | JobCancelled | ScheduleChanged | JobTriggered | WorkflowSubmitted
                | WorkflowCancelled | WorkflowSignalled)  # fmt: skip
"""A client's record on jobs.intake."""


def intake_key_of(record: IntakeRecord) -> bytes:
    """The key a record has on jobs.intake, whoever sends it (the clients, and the timers
    passing a record on from an owner's topic, whatever key its producer gave it): a
    submission's :func:`intake_key`, a workflow's record its workflow id, a command its
    job's :func:`partition_key`."""
    if isinstance(record, JobSubmitted):
        return intake_key(record)
    if isinstance(record, WorkflowSubmitted | WorkflowCancelled | WorkflowSignalled):
        return partition_key(record.workflow_id, record.workflow_id)
    return partition_key(record.job_id, record.workflow_id)
