"""The running cluster a module's fault scenarios share (conftest.py's fixture)."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobstream._ops.faults.cluster import FaultCluster
from jobstream._pipeline.errors import BrokerError


class SharedClusters:
    """The running cluster a module's scenarios share, one size at a time: asked for
    another number of nodes, it stops the one it holds and starts that one."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.running: FaultCluster | None = None

    def of(self, nodes: int) -> FaultCluster:
        """A running cluster of ``nodes`` nodes (the one held, if it has as many)."""
        if self.running is not None and self.running.nodes == nodes:
            return self.running
        self.stop()
        cluster = FaultCluster(self.home / f"kafka-{nodes}-nodes", nodes)
        try:
            cluster.start()
        except BrokerError as exc:
            cluster.stop()
            pytest.fail(f"the shared {nodes}-node Kafka cluster did not start: {exc}")
        self.running = cluster
        return cluster

    def stop(self) -> None:
        if self.running is not None:
            self.running.stop()
            self.running = None
