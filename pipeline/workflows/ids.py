"""The ids of a workflow's steps, derived so that any client can compute them.

A workflow belongs to its owner: two owners may both name one ``payroll-2026`` and get two
workflows. A step's job id is ``W`` and 25 Crockford base32 characters of
blake2b-128(owner NUL workflow id NUL step name): a resubmitted workflow gives its steps
the same ids, another owner's workflow of the same name gives them others, ``jobstream
status`` finds a step from its name, and a plain Kafka client needs no id generator. ``W``
never starts a ULID (``0``-``7``) nor an idempotent job id (``K``).

With an idempotency key, the workflow id itself is derived the same way from the owner
and the key (prefix ``F``), as a job's id is from its key; a run of a recurring workflow
gets one from the schedule's id and the run's time (prefix ``R``).
"""

from __future__ import annotations

import hashlib

from jobstream._pipeline.scheduling.ids import ALPHABET, ID_LENGTH

STEP_PREFIX = "W"
WORKFLOW_PREFIX = "F"
_HASH_CHARS = ID_LENGTH - 1
_DIGEST_BITS = 128


def _hashed(prefix: str, first: str, second: str) -> str:
    digest = hashlib.blake2b(f"{first}\x00{second}".encode(), digest_size=16).digest()
    value = int.from_bytes(digest, "big") >> (_DIGEST_BITS - 5 * _HASH_CHARS)
    return prefix + "".join(
        ALPHABET[(value >> shift) & 31] for shift in range(5 * (_HASH_CHARS - 1), -1, -5)
    )


def step_job_id(owner: str, workflow_id: str, step: str) -> str:
    """The job id of step ``step`` of ``owner``'s workflow ``workflow_id``."""
    return _hashed(STEP_PREFIX, f"{owner}\x00{workflow_id}", step)


def idempotent_workflow_id(owner: str, idempotency_key: str) -> str:
    """The workflow id of a submission with an idempotency key."""
    return _hashed(WORKFLOW_PREFIX, owner, idempotency_key)


RUN_PREFIX = "R"


def run_workflow_id(schedule_id: str, due_ms: int) -> str:
    """The workflow id of the run of recurring workflow ``schedule_id`` due at ``due_ms``."""
    return _hashed(RUN_PREFIX, schedule_id, str(due_ms))


SCHEDULE_PREFIX = "S"


def schedule_job_id(owner: str, workflow_id: str) -> str:
    """The job id of ``owner``'s recurring workflow ``workflow_id`` in jobs.status (job type
    :data:`~jobstream._pipeline.model.lifecycle.SCHEDULE_JOB_TYPE`): derived from both, as
    two owners' workflows of one id are two schedules."""
    return _hashed(SCHEDULE_PREFIX, owner, workflow_id)
