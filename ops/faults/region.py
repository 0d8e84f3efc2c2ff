"""A region of the failover scenario: one Kafka cluster, the pipeline on it, and a reader
of its jobs.events.

Both regions' pipelines write to one handler-side record (ops/faults/journal.py), so a
job run once in each region counts as run twice.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

from jobstream._ops.faults import app as fault_app
from jobstream._ops.faults.cluster import FaultCluster
from jobstream._ops.faults.groups import pipeline_groups, wait_assigned
from jobstream._ops.faults.journal import RUNS_DIR_ENV
from jobstream._ops.faults.observer import EventsObserver
from jobstream._ops.faults.supervisor import Supervisor
from jobstream._ops.kafka.ports import free_ports
from jobstream._ops.stack import Component, Stack, components, process_env, worker
from jobstream._pipeline.config import Settings, load_settings
from jobstream._pipeline.errors import JobstreamError
from jobstream._pipeline.kafka.admin import ensure_topics
from jobstream._pipeline.topics import Topics

log = logging.getLogger(__name__)

WORKERS = ("faults-0", "faults-1")
CONCURRENCY = 8
READY_TIMEOUT_S = 120.0


def pipeline_parts(base_port: int) -> list[Component]:
    """The timers, the status processor, the retry router and two workers of the fault
    app, as every fault run has them."""
    parts = components(base_port, app=fault_app.__name__, job_types=())
    parts += [worker(fault_app.JOB_TYPE, worker_id, base_port + 3 + i, app=fault_app.__name__,
                     concurrency=CONCURRENCY)
              for i, worker_id in enumerate(WORKERS)]  # fmt: skip
    return parts


class Region:
    def __init__(self, name: str, home: Path, *, prefix: str, runs_dir: Path,
                 heap_mb: int) -> None:  # fmt: skip
        self.name = name
        self.home = home / name
        self.prefix = prefix
        self.runs_dir = runs_dir
        self.cluster = FaultCluster(self.home / "kafka", 1, heap_mb=heap_mb)
        self.supervisor: Supervisor | None = None
        self.observer: EventsObserver | None = None
        self._settings: Settings | None = None

    @property
    def settings(self) -> Settings:
        if self._settings is None:
            raise JobstreamError(f"the {self.name} cluster is not started")
        return self._settings

    @property
    def state_dir(self) -> Path:
        """The processors' state: kept across a rebuild of the region's cluster."""
        return self.home / "state"

    def start_cluster(self) -> None:
        """Start the cluster (anew after :meth:`lose`: other ports, another cluster id) and
        create the topics."""
        layout = self.cluster.start()
        self._settings = load_settings(
            bootstrap_servers=layout.bootstrap, topic_prefix=self.prefix,
            replication_factor=layout.replication, job_types=(fault_app.JOB_TYPE,),
            librdkafka={}, schema_registry_url=None, security_protocol="PLAINTEXT",
        )  # fmt: skip
        ensure_topics(self.settings.kafka_config, Topics(self.settings).specs(),
                      replication_factor=self.settings.replication_factor)  # fmt: skip

    def start_pipeline(self, env: dict[str, str] | None = None) -> float:
        """Start the pipeline on the region's cluster (``env``: more of its environment)
        and wait until every group holds its partitions; the seconds from the start to
        then."""
        started = time.monotonic()
        stack = Stack(self.home / f"stack-{time.strftime('%H%M%S')}")
        stack.env = {**process_env(self.settings),
                     "JOBSTREAM_JOB_TYPES": fault_app.JOB_TYPE,
                     "JOBSTREAM_STATE_DIR": str(self.state_dir),
                     RUNS_DIR_ENV: str(self.runs_dir), **(env or {})}  # fmt: skip
        self.supervisor = Supervisor(stack)
        self.supervisor.start(pipeline_parts(free_ports(12)))
        groups = pipeline_groups(self.settings, fault_app.JOB_TYPE, len(WORKERS))
        wait_assigned(self.settings, groups, READY_TIMEOUT_S)
        return time.monotonic() - started

    def observe(self) -> EventsObserver:
        """A reader of the region's jobs.events from its start."""
        self.observer = EventsObserver(self.settings)
        return self.observer

    def lose(self) -> int:
        """The region is gone: SIGKILL its Kafka node, then every process of its pipeline
        (cut off from their cluster, they could do nothing more); the node's pid."""
        pid = self.cluster.kill(1)
        if self.supervisor is not None:
            for name in list(self.supervisor.stack.processes):
                self.supervisor.kill(name)
        return pid

    def stop_pipeline(self) -> None:
        """Stop the pipeline as an operator would (SIGTERM: each process drains and
        commits)."""
        if self.supervisor is not None:
            self.supervisor.stop()

    def close_observer(self) -> None:
        if self.observer is not None:
            self.observer.close()

    def stop(self) -> None:
        """Stop what runs and remove the cluster's data (the logs stay)."""
        self.stop_pipeline()
        self.cluster.stop()
