"""The status processor driven with no broker (pipeline/runtime/driver.py), on real RocksDB
files and a clock the test sets, and what its outputs are read with."""

from __future__ import annotations

from pathlib import Path

from jobstream._pipeline.config import Settings
from jobstream._pipeline.model.records import ExecutionRequested, JobLifecycle
from jobstream._pipeline.runtime import Output
from jobstream._pipeline.runtime.driver import ProcessorDriver
from jobstream._pipeline.serde import Event, JobStatus, encode_status
from jobstream._pipeline.state.batch import PartitionBatch
from jobstream._pipeline.status.logic import StatusPolicy
from jobstream._pipeline.status.processor import StatusProcessor
from jobstream._pipeline.status.state import JobRecord, StatusState
from jobstream._pipeline.topics import Topics
from tests.pipeline.status import events as ev
from tests.pipeline.status.events import T0

JOB = "01JD3W6Q8Z5X7M2K4N9P0R1S2T"
OTHER = "01JD3W6Q8Z5X7M2K4N9P0R1S2V"
LEASE = 30_000
PARTITION = 2
EVENTS = Topics(Settings()).events


class StatusDriver(ProcessorDriver[StatusState]):
    """One runner iteration per step: each event piped (and committed) in turn, then the
    leases and the purge on the clock."""

    processor: StatusProcessor

    def step(self, now: int, *events: JobLifecycle) -> list[Output]:
        self.now_ms = now
        emits = [emit for event in events for emit in
                 self.pipe(EVENTS, ev.as_event(event), partition=PARTITION)]  # fmt: skip
        emits += self.advance()
        cache = self.processor.open(PartitionBatch(self.store(PARTITION)), PARTITION).cache
        assert cache is not None
        for job in (JOB, OTHER):  # the cache holds what the store holds
            if job in cache:
                assert cache[job] == self.record(job)
        for emit in emits:  # every status the tests make is written as JobStatus writes it
            if isinstance(emit.value, JobRecord):
                assert emit.value.status_json() == encode_status(emit.value.to_status())
        return emits

    def record(self, job_id: str = JOB) -> JobRecord | None:
        return StatusState(PartitionBatch(self.store(PARTITION))).get(job_id)

    def execution(self, job_id: str = JOB) -> ExecutionRequested | None:
        return StatusState(PartitionBatch(self.store(PARTITION))).get_execution(job_id)


def status_driver(path: Path, policy: StatusPolicy | None = None) -> StatusDriver:
    processor = StatusProcessor(Settings(), policy or StatusPolicy(lease_ms=LEASE))
    return StatusDriver(processor, path, partitions=(PARTITION,), now_ms=T0)


def lifecycles(emits: list[Output]) -> list[JobLifecycle]:
    return [e.value.data for e in emits if isinstance(e.value, Event)]


def statuses(emits: list[Output]) -> list[JobStatus]:
    return [e.value.to_status() for e in emits if isinstance(e.value, JobRecord)]
