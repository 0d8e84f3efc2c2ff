"""The id of the job a source record submits: derived from (trigger, topic, partition,
offset), through the idempotency-key path.

The job's idempotency key is ``trigger:<name>:<topic>:<partition>:<offset>`` (when that is
longer than a key's 200 characters, name and topic are replaced by their hash), so its id is
:func:`~jobstream._pipeline.model.idempotency.idempotent_job_id` of the trigger's owner and
that key. A record read again (the processor killed before its commit, a group reset, a
replay from the start) gives the same id; the timers keep the first submission of an id
and drop the others for as long as they remember its key (a week after it fired,
``TimerPolicy.marker_ttl_ms``).
"""

from __future__ import annotations

import hashlib

from jobstream._pipeline.model.idempotency import idempotent_job_id
from jobstream._pipeline.model.rules import MAX_IDEMPOTENCY_KEY_CHARS


def trigger_idempotency_key(name: str, topic: str, partition: int, offset: int) -> str:
    key = f"trigger:{name}:{topic}:{partition}:{offset}"
    if len(key) <= MAX_IDEMPOTENCY_KEY_CHARS:
        return key
    digest = hashlib.sha256(f"{name}\x00{topic}".encode()).hexdigest()  # 64 characters
    return f"trigger:sha256-{digest}:{partition}:{offset}"


def trigger_job_id(owner: str, name: str, topic: str, partition: int, offset: int) -> str:
    """The job id a record of ``topic`` at ``partition``/``offset`` gets from a trigger."""
    return idempotent_job_id(owner, trigger_idempotency_key(name, topic, partition, offset))
