"""What every fault scenario's own cluster needs."""

from __future__ import annotations

import pytest

from ops.kafka import jars
from pipeline.errors import BrokerError
from tests.conftest import IN_CI


@pytest.fixture(scope="module")
def kafka_runtime(child_processes: None) -> None:
    """Java and the Kafka jars, which every run's own cluster needs."""
    try:
        jars.java_executable()
        jars.ensure_jars()
    except BrokerError as exc:
        if IN_CI:
            pytest.fail(f"Kafka cannot run here: {exc}")
        pytest.skip(f"Kafka cannot run here: {exc}")
