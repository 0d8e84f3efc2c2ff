"""Where each run's log lines are on jobs.logs, in the view store on real RocksDB files:
kept per execution, leaving with the job; and the records the updater indexes."""

from __future__ import annotations

from jobstream._connectors.views import ViewStore
from jobstream._connectors.views.query import logs_location
from tests.connectors.views.records import status, submitted

T0 = 1_767_225_600_000  # 2026-01-01


def test_where_each_runs_lines_are_is_kept_per_execution_and_leaves_with_the_job(
    store: ViewStore,
) -> None:
    job, other = submitted("acme", at_ms=T0), submitted("acme", at_ms=T0 + 1)
    first, retry = f"{job['job_id']}:{T0}:1", f"{job['job_id']}:{T0}:2"
    batch = store.batch()
    batch.submitted(job)
    batch.submitted(other)
    batch.status(status(job, "SCHEDULED", at_ms=T0 + 2))
    batch.run_logs(job["job_id"], first, (1, 40))
    batch.run_logs(job["job_id"], retry, (1, 41))
    batch.run_logs(other["job_id"], f"{other['job_id']}:{T0}:1", (0, 7))
    batch.commit()
    assert logs_location(store, job["job_id"], first) == (1, 40)
    assert logs_location(store, job["job_id"], retry) == (1, 41), "a retry's beside the first's"
    assert logs_location(store, job["job_id"], f"{job['job_id']}:{T0}:3") is None
    assert logs_location(store, "01JNOSUCHJOB0000000000000", first) is None

    batch = store.batch()
    batch.status(status(job, "SUCCEEDED", at_ms=T0 + 30))
    batch.commit()
    batch = store.batch()
    assert batch.purge(before_ms=T0 + 100) == 1
    batch.commit()
    assert logs_location(store, job["job_id"], first) is None
    assert logs_location(store, job["job_id"], retry) is None
    assert not any(job["job_id"].encode() in k for k, _ in store.scan(b"", b"\xff"))
    assert logs_location(store, other["job_id"], f"{other['job_id']}:{T0}:1") == (0, 7)
