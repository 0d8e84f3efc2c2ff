"""The status processor driven with no broker (pipeline/runtime/driver.py), on real RocksDB
files and a clock the test sets, and what its outputs are read with."""

from __future__ import annotations

from pathlib import Path

from jobstream._pipeline.config import Settings
from jobstream._pipeline.model.records import ExecutionRequested, JobLifecycle
from jobstream._pipeline.runtime import Output
from jobstream._pipeline.runtime.driver import ProcessorDriver
from jobstream._pipeline.serde import Event, JobStatus, decode_status, encode_status
from jobstream._pipeline.state.batch import PartitionBatch
from jobstream._pipeline.status.logic import StatusPolicy
from jobstream._pipeline.status.processor import StatusProcessor
from jobstream._pipeline.status.record import is_internal
from jobstream._pipeline.status.state import JobRecord, StatusState
from jobstream._pipeline.topics import Topics
from tests.pipeline.status import events as ev
from tests.pipeline.status.events import T0

JOB = "01JD3W6Q8Z5X7M2K4N9P0R1S2T"
OTHER = "01JD3W6Q8Z5X7M2K4N9P0R1S2V"
LEASE = 30_000
PARTITION = 2
EVENTS = Topics(Settings()).events
STATUS = Topics(Settings()).status


class StatusDriver(ProcessorDriver[StatusState]):
    """One runner iteration per step: each event piped (and committed) in turn, then the
    leases and the purge on the clock. A step returns what each commit produced: its
    outputs, then its records on jobs.status (the store's changelog) as outputs there."""

    processor: StatusProcessor
    _seen = 0
    """The jobs.status records :meth:`logged` has returned."""

    def step(self, now: int, *events: JobLifecycle) -> list[Output]:
        self.now_ms = now
        emits = []
        for event in events:
            emits += self.pipe(EVENTS, ev.as_event(event), partition=PARTITION)
            emits += self.logged()
        emits += self.advance()
        emits += self.logged()
        cache = self.processor.open(PartitionBatch(self.store(PARTITION)), PARTITION).cache
        assert cache is not None
        for job in (JOB, OTHER):  # the cache holds what the store holds
            if job in cache:
                assert cache[job] == self.record(job)
        for emit in emits:  # every status the tests make is written as JobStatus writes it
            if emit.topic == STATUS and isinstance(emit.value, bytes):
                assert emit.value == encode_status(decode_status(emit.value))
        return emits

    def logged(self) -> list[Output]:
        """The jobs.status records committed since the last call, as outputs."""
        log = self.changelog[PARTITION]
        seen, self._seen = self._seen, len(log)
        return [Output(STATUS, record[0], record[1], PARTITION,
                       record[2] if len(record) == 3 else None)
                for record in log[seen:]]  # fmt: skip

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
    """The jobs' statuses written to jobs.status (not its tombstones nor the store's own)."""
    return [decode_status(e.value) for e in emits if e.topic == STATUS and
            isinstance(e.value, bytes) and not is_internal(e.key, e.headers)]  # fmt: skip
