"""/metrics of every process of a running pipeline, scraped while jobs go through it: the
named series move as the jobs do (docs/metrics.md)."""

from __future__ import annotations

from jobstream._ops.scrape import Samples, has, scrape, value
from jobstream._ops.stack import Stack
from jobstream._pipeline.jobs.client import JobClient
from jobstream._pipeline.model.job import JobRequest, RetryPolicy
from jobstream._pipeline.status.query import read_statuses
from jobstream._pipeline.topics import Topics
from tests.support.stack import pipeline_fixtures
from tests.support.waiting import wait_for

TYPE = "data.process"
PROCESSES = {"timers": "timers", "status": "status-processor", "retry": "retry-router",
             "worker": f"worker-{TYPE}-0"}  # fmt: skip


pipeline_topics, stack = pipeline_fixtures("metrics", lease_s=5)


def scrape_all(stack: Stack) -> dict[str, Samples]:
    return {role: scrape(stack.processes[name][0].metrics_port)
            for role, name in PROCESSES.items()}  # fmt: skip


def job(**params: object) -> JobRequest:
    retry = params.pop("retry", None)
    return JobRequest(job_type=TYPE, owner="metrics", params=params, retry=retry)  # type: ignore[arg-type]


def test_the_series_of_every_process_move_with_the_jobs(
    stack: Stack, pipeline_topics: Topics
) -> None:
    settings = pipeline_topics.settings
    before = scrape_all(stack)
    fast = RetryPolicy(initial_backoff_ms=200, jitter=0)
    requests = [job() for _ in range(4)]
    requests += [job(fail_until_attempt=2, retry=fast), job(non_retryable=True)]
    with JobClient(settings) as client:
        ids = client.submit_many(requests)
    wait_for(lambda: sum(1 for i, s in read_statuses(settings, owner="metrics").items()
                         if i in ids and s.state in ("SUCCEEDED", "DEAD_LETTERED")) == 6,
             timeout_s=120, interval_s=0.5, what="every job to end")  # fmt: skip

    def moved() -> dict[str, Samples] | None:
        now = scrape_all(stack)

        def grew(role: str, name: str, by: float, **labels: str) -> bool:
            return value(now[role], name, **labels) - value(before[role], name, **labels) >= by

        checks = [
            grew("timers", "jobstream_fired_total", 7, job_type=TYPE),  # 6 jobs and a retry
            grew("timers", "jobstream_fire_lateness_seconds_count", 7, job_type=TYPE),
            grew("worker", "jobstream_start_lateness_seconds_count", 7, job_type=TYPE),
            grew("worker", "jobstream_executions_total", 5, job_type=TYPE, outcome="SUCCEEDED"),
            grew("worker", "jobstream_executions_total", 2, job_type=TYPE, outcome="FAILED"),
            grew("retry", "jobstream_retries_total", 1, job_type=TYPE),
            grew("retry", "jobstream_dead_letters_total", 1, job_type=TYPE),
        ] + [grew(role, "jobstream_commit_seconds_count", 1, component=role)
             for role in PROCESSES]  # fmt: skip
        return now if all(checks) else None

    after = wait_for(moved, timeout_s=30, interval_s=0.5, what="the series to move")
    # exactly these, no more: nothing is counted twice
    assert (
        value(after["retry"], "jobstream_retries_total", job_type=TYPE)
        - value(before["retry"], "jobstream_retries_total", job_type=TYPE)
        == 1
    )
    assert value(after["worker"], "jobstream_executions_total", job_type=TYPE,
                 outcome="SUCCEEDED") - value(before["worker"], "jobstream_executions_total",
                                              job_type=TYPE, outcome="SUCCEEDED") == 5  # fmt: skip
    # the lateness histograms keep the promise's bucket
    assert has(after["timers"], "jobstream_fire_lateness_seconds_bucket", job_type=TYPE, le="2.0")
    # the gauges the loops set: lag per group and topic, the stores' size
    prefix = settings.topic_prefix
    wait_for(lambda: all(has(scrape(stack.processes[name][0].metrics_port),
                             "jobstream_consumer_lag", group=group)
                         for name, group in (
                             ("timers", f"{prefix}jobstream.timers"),
                             ("status-processor", f"{prefix}jobstream.status"),
                             ("retry-router", f"{prefix}jobstream.retry"),
                             (PROCESSES["worker"], f"{prefix}jobstream.workers.{TYPE}"))),
             timeout_s=15, what="consumer lag of every group")  # fmt: skip
    lag = scrape_all(stack)
    assert value(lag["worker"], "jobstream_consumer_lag", group=f"{prefix}jobstream.workers.{TYPE}",
                 topic=pipeline_topics.execution(TYPE, "NORMAL")) == 0  # fmt: skip
    assert has(lag["timers"], "jobstream_store_keys", component="timers")
    assert value(lag["worker"], "jobstream_worker_heartbeat_seconds", job_type=TYPE) > 0
    assert value(lag["status"], "jobstream_store_keys", component="status") > 0
    # the workers and processors commit in transactions; none aborted in a quiet run
    assert value(lag["worker"], "jobstream_transactions_aborted_total", component="worker") == 0
