"""What the fault scenarios run on: Java and the Kafka jars, and one node that a module's
scenarios share when their fault spares the broker (ops/faults/run.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from jobstream._ops.faults.cluster import FaultCluster
from jobstream._ops.kafka import jars
from jobstream._pipeline.errors import BrokerError
from tests.support.tools import unavailable


@pytest.fixture(scope="module")
def kafka_runtime(child_processes: None) -> None:
    """Java and the Kafka jars, which every run's own cluster needs."""
    try:
        jars.java_executable()
        jars.ensure_jars()
    except BrokerError as exc:
        unavailable(f"Kafka cannot run here: {exc}")


@pytest.fixture(scope="module")
def shared_cluster(kafka_runtime: None,
                   tmp_path_factory: pytest.TempPathFactory) -> Iterator[FaultCluster]:  # fmt: skip
    """One node for the module's scenarios that spare the broker, each on topics of its
    own: a broker start and its warm-up once a module, not once a scenario."""
    cluster = FaultCluster(tmp_path_factory.mktemp("shared-kafka"), 1)
    try:
        cluster.start()
    except BrokerError as exc:
        cluster.stop()
        pytest.fail(f"the shared Kafka node did not start: {exc}")
    try:
        yield cluster
    finally:
        cluster.stop()
