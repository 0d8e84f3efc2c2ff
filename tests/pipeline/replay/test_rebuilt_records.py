"""What `jobstream replay status` writes back, read from a status store the processor
folded (no broker): each job's record as the live processor writes it, on its store's
partition, with its headers; none for a job past its retention."""

from __future__ import annotations

from pathlib import Path

import orjson

from jobstream._pipeline.replay.status import records_of
from jobstream._pipeline.status.logic import StatusPolicy
from jobstream._pipeline.status.record import EXECUTION_HEADER, RECORD_HEADER
from tests.pipeline.status import events as ev
from tests.support.status import JOB, LEASE, OTHER, PARTITION, status_driver


def test_the_rebuilt_records_are_the_live_ones_but_the_purged(tmp_path: Path) -> None:
    driver = status_driver(tmp_path, StatusPolicy(lease_ms=LEASE, retention_ms=1000))
    run = ev.execution(JOB, epoch=ev.T0)
    driver.step(ev.T0, ev.fired(run), ev.outcome("STARTED", run),
                ev.lifecycle("CANCELLED", OTHER))  # fmt: skip
    live = {r[0]: r for r in driver.changelog[PARTITION]}
    try:
        found = dict(records_of(driver.store(PARTITION), PARTITION, ev.T0 + 999))
        assert set(found) == {JOB.encode(), OTHER.encode()}
        running = found[JOB.encode()]
        assert (running.value, running.partition) == (live[JOB.encode()][1], PARTITION)
        assert dict(running.headers) == dict(live[JOB.encode()][2])  # type: ignore[misc]
        assert orjson.loads(dict(running.headers)[EXECUTION_HEADER]) == run
        assert RECORD_HEADER in dict(found[OTHER.encode()].headers)
        later = dict(records_of(driver.store(PARTITION), PARTITION, ev.T0 + 1000))
        assert set(later) == {JOB.encode()}, "past its retention: purged live, left out"
    finally:
        driver.close()
