"""The keys on the broker (concurrency, rate, debounce, singleton): the package's modules
share one pipeline stack, and tests/support/scheduling.py hands the package whole to one
of ``make test``'s processes, so the stack starts once a run.

Timers, status processor, retry router and two ``data.process`` workers of the test app
(4 threads each, 0.5 s heartbeats), on topics of their own: one timer partition, two
execution partitions (the concurrency test's two keys share one of them), two of events.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from jobstream._ops.faults.groups import wait_assigned
from jobstream._ops.kafka.ports import free_ports
from jobstream._ops.stack import Stack, components, running_stack, worker
from jobstream._pipeline.config import Settings
from jobstream._pipeline.kafka.admin import ensure_topics
from jobstream._pipeline.topics import Topics
from tests.support.stack import APP

TYPE = "data.process"
WORKERS = 2


@pytest.fixture(scope="package")
def settings(kafka_bootstrap: str) -> Settings:
    keyed = Settings(bootstrap_servers=kafka_bootstrap,
                     topic_prefix=f"keys-{uuid.uuid4().hex[:8]}.",
                     timer_partitions=1, exec_partitions=2, events_partitions=2,
                     status_partitions=1, dlq_partitions=1)  # fmt: skip
    ensure_topics(keyed.kafka_config, Topics(keyed).specs())
    return keyed


@pytest.fixture(scope="package")
def pipeline_topics(settings: Settings) -> Topics:
    return Topics(settings)


@pytest.fixture(scope="package")
def stack(settings: Settings, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    port = free_ports(3 + WORKERS)
    parts = components(port, app=APP, job_types=(), lease_s=5)  # timers, status, retry
    parts += [worker(TYPE, f"w{i}", port + 3 + i, app=APP, concurrency=4,
                     extra=("--heartbeat", "500ms"))
              for i in range(WORKERS)]  # fmt: skip
    with running_stack(settings, tmp_path_factory.mktemp("stack"), parts) as running:
        wait_assigned(settings, {f"{settings.topic_prefix}jobstream.workers.{TYPE}": WORKERS},
                      timeout_s=120)  # fmt: skip
        yield running
