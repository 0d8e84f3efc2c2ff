"""The failover scenario's short form (ops/faults/failover.py): two one-node clusters and
MirrorMaker 2, the primary lost mid-load with jobs pending in its timers, the pipeline
started on the standby; then a failback with jobs pending. No job may be lost in either;
every job run twice is counted, and flagged by the standby's status processor unless its
first run's outcome was lost with the primary. The long form, at 1,000 jobs/s, is a
command (docs/reliability.md):

    jobstream faults run --scenario failover --jobs 30000 --window 30s --pending-jobs 1000 \
        --failback-jobs 1000
"""

from __future__ import annotations

from pathlib import Path

import pytest

from jobstream._ops.faults.failover import FailoverOptions, problems, run_failover

JOBS = 300
PENDING_JOBS = 50
"""Submitted first, due 10 s after the loss and never sent again: pending in the primary's
timers when it is lost, fired by the standby's from the copied changelog alone."""
FAILBACK_JOBS = 50
MIRROR_LAG_S = 10.0
"""A run whose outcome the standby never heard of ended at most this long before the loss:
what MirrorMaker had not copied yet (within a second at this size on a quiet machine; 8.6 s
at 1,000 jobs/s on a loaded one, docs/reliability.md)."""
AFTER_LOSS_S = 2.0
"""... or after it, before its worker was killed: the region's processes are SIGKILLed
right after its broker, and a handler may finish a run in between."""


@pytest.mark.timeout(420)
def test_a_failover_and_a_failback_lose_no_job_and_count_every_second_run(
    kafka_runtime: None, tmp_path: Path
) -> None:
    options = FailoverOptions(jobs=JOBS, window_s=6.0, lead_s=2.0, loss_after_s=3.0,
                              resubmit_s=6.0, deadline_s=90.0, pending_jobs=PENDING_JOBS,
                              pending_after_loss_s=10.0, failback_jobs=FAILBACK_JOBS,
                              failback_due_s=15.0, heap_mb=384)  # fmt: skip
    result = run_failover(options, tmp_path)
    print("failover:", {k: v for k, v in result.items() if k not in ("ids", "failback")})
    print("failback:", {k: v for k, v in result["failback"].items() if k != "ids"})

    assert problems(result) == [], result["ids"]
    assert result["ended"] == result["submitted"] == JOBS + PENDING_JOBS
    assert result["lost"] == 0
    assert result["pending"] == {"submitted": PENDING_JOBS, "ended": PENDING_JOBS, "lost": 0,
                                 "run_more_than_once": 0}  # fmt: skip
    assert result["rto_first_fire_ms"] is not None, "the standby fired nothing"
    # Every second run is counted, and flagged on the standby unless its first run ended
    # around the loss, its outcome not copied yet or never written.
    ages = result["unflagged_ended_before_loss_ms"]
    assert len(ages) == result["unflagged_duplicate_runs"]
    assert all(-AFTER_LOSS_S * 1000 <= age <= MIRROR_LAG_S * 1000 for age in ages), (
        ages, result["ids"])

    back = result["failback"]
    assert back["pending_at_switch"] == FAILBACK_JOBS, "the jobs fired before the switch"
    assert back["ended"] == FAILBACK_JOBS
    assert back["lost"] == 0
    assert back["run_more_than_once"] == 0, back["ids"]
