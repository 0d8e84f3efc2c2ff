"""When the pipeline is ready for jobs: every consumer group stable, with its members.

A process answers /healthz before its consumers have joined their groups (a worker's
lane waits for its transactional producer first), so a healthy stack may not yet read
anything. A run submits jobs, and a scenario strikes, only once each group holds the
members it should, each with partitions: otherwise a kill could hit a worker with no
work, and the run would measure nothing.
"""

from __future__ import annotations

import logging
import time

from confluent_kafka import ConsumerGroupState, KafkaException
from confluent_kafka.admin import AdminClient

from jobstream._pipeline.config import Settings
from jobstream._pipeline.errors import JobstreamError
from jobstream._pipeline.kafka import clients

log = logging.getLogger(__name__)


DESCRIBE_TIMEOUT_S = 5.0
"""How long one look at the groups may take: a look made before the broker has its group
coordinator (a fresh broker makes __consumer_offsets on the first group's join) is not
answered, and librdkafka waits its whole request timeout (60 s) unless given less."""


def pipeline_groups(settings: Settings, job_type: str, workers: int) -> dict[str, int]:
    """Group name -> members expected: one per processor, the workers of the type."""
    prefix = settings.topic_prefix
    return {f"{prefix}jobstream.timers": 1, f"{prefix}jobstream.status": 1,
            f"{prefix}jobstream.retry": 1,
            f"{prefix}jobstream.workers.{job_type}": workers}  # fmt: skip


def wait_assigned(settings: Settings, expected: dict[str, int], timeout_s: float) -> float:
    """Wait until each group is stable with its members all holding partitions; return
    the seconds waited. Raises naming the groups still short after ``timeout_s``."""
    admin = clients.admin_client(settings.kafka_config)
    started = time.monotonic()
    while True:
        short = _short(admin, expected)
        if not short:
            return time.monotonic() - started
        if time.monotonic() - started > timeout_s:
            raise JobstreamError(f"the pipeline's consumer groups are not ready after "
                                 f"{timeout_s:.0f} s: {short}")  # fmt: skip
        time.sleep(0.5)


def _short(admin: AdminClient, expected: dict[str, int]) -> dict[str, str]:
    short = {}
    looks = admin.describe_consumer_groups(list(expected), request_timeout=DESCRIBE_TIMEOUT_S)
    for group, future in looks.items():
        try:
            found = future.result()
        except KafkaException as exc:
            short[group] = str(exc)
            continue
        holding = [m for m in found.members if m.assignment.topic_partitions]
        if found.state != ConsumerGroupState.STABLE or len(holding) < expected[group]:
            short[group] = f"{found.state.name}, {len(holding)} of {expected[group]} members"
    return short
