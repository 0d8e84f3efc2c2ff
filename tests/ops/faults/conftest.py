"""What the fault scenarios run on: Java and the Kafka jars, and the cluster that a
module's scenarios share when their fault leaves it whole (ops/faults/run.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from jobstream._ops.kafka import jars
from jobstream._pipeline.errors import BrokerError
from tests.ops.faults.shared_clusters import SharedClusters
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
def shared_clusters(
    kafka_runtime: None, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SharedClusters]:
    """The cluster of the module's scenarios that leave it whole, each on topics of its
    own: a cluster start and its warm-up once a module and size, not once a scenario."""
    clusters = SharedClusters(tmp_path_factory.mktemp("shared-kafka"))
    try:
        yield clusters
    finally:
        clusters.stop()
