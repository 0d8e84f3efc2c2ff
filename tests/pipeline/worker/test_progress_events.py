"""Progress on jobs.events, from a worker loop on the real broker: a handler that reports
a thousand times a second sends a few HEARTBEATs carrying the latest report, and its last
report lands before its outcome, on a thread and in a child process alike."""

from __future__ import annotations

from itertools import pairwise

import orjson
import pytest

from jobstream._pipeline.topics import Topics
from jobstream._pipeline.worker.app import load_app
from tests.pipeline.worker.executions import execution_requested, submit
from tests.pipeline.worker.support import EventLog, StartWorker

SECONDS = 1.5
INTERVAL_S = 0.25


@pytest.mark.parametrize("isolation", ["thread", "process"])
def test_a_flood_of_reports_is_coalesced_and_the_last_goes_before_the_outcome(
    topics: Topics, start_worker: StartWorker, events: EventLog, isolation: str
) -> None:
    app = load_app("tests.pipeline.worker.progress_app:flood")
    (execution_id,) = submit(topics, execution_requested(params={"seconds": SECONDS}))
    start_worker(app, isolation=isolation, heartbeat_s=30.0, progress_interval_s=INTERVAL_S)

    done = events.wait(execution_id, "SUCCEEDED")[0]
    reports = int(orjson.loads(done["result"]))
    assert reports > 300, "the handler reported far more often than the worker sends"
    records = events.of(execution_id)
    kinds = [r["kind"] for r in records]
    assert kinds[0] == "STARTED" and kinds[-1] == "SUCCEEDED"
    beats = [r for r in records if r["kind"] == "HEARTBEAT"]
    assert set(kinds[1:-1]) == {"HEARTBEAT"}, kinds
    assert all(b["progress"] is not None for b in beats), "no plain heartbeat within 30 s"
    assert SECONDS / INTERVAL_S - 2 <= len(beats) <= SECONDS / INTERVAL_S + 2, len(beats)
    sent = [b["progress"] for b in beats]
    assert (sent[-1]["fraction"], sent[-1]["message"]) == (1.0, "done")
    fractions = [p["fraction"] for p in sent]
    assert fractions == sorted(fractions), "each the latest when it left"
    # Sent on the loop's turn once the interval has passed: the gaps between reports, but
    # the last (sent with the outcome, interval or not), are at least the interval.
    gaps = [later["at_ms"] - earlier["at_ms"] for earlier, later in pairwise(beats[:-1])]
    assert min(gaps) >= INTERVAL_S * 1000 - 10, gaps
    assert all(b["epoch"] == done["epoch"] and b["worker_id"] == done["worker_id"] for b in beats)
