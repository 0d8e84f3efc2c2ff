"""``jobstream demo``: the whole pipeline running real jobs, shown as their status changes.

Starts the timers, the status processor, the retry router, the trigger processor (idle
until a trigger is defined: docs/triggers.md) and one worker per demo job type
(ops/demo_jobs) as processes, then submits: one-off jobs of the three types, a
weekday cron job in Europe/Paris, a job that fails twice and then succeeds, a poison job
that ends in the dead-letter topic, a job cancelled before its time, and a small workflow
(a CSV aggregation, then a chart, then a report, each step BLOCKED until its parent
succeeded). It prints every change of their status from jobs.status until each one has
settled.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from confluent_kafka import Consumer, TopicPartition
from rich.console import Console

from jobstream._ops.stack import Stack, components
from jobstream._pipeline.clock import instant_of
from jobstream._pipeline.config import Settings
from jobstream._pipeline.errors import JobstreamError
from jobstream._pipeline.jobs.client import JobClient
from jobstream._pipeline.kafka import clients
from jobstream._pipeline.kafka.watermarks import watermarks
from jobstream._pipeline.model.job import JobRequest
from jobstream._pipeline.scheduling import CronSpec
from jobstream._pipeline.serde import JobStatus, decode_status
from jobstream._pipeline.status.query import read_statuses
from jobstream._pipeline.status.record import is_internal
from jobstream._pipeline.topics import Topics

console = Console()

SETTLED = {"SUCCEEDED", "DEAD_LETTERED", "CANCELLED", "PAUSED"}
LOOK_EVERY_S = 10.0
"""How often the demo reads the real states of jobs it has not seen settle."""


def _status_reader(settings: Settings) -> Consumer:
    """A consumer of jobs.status from its end as it is now, before the demo submits
    anything: every status record of the demo's jobs comes after these offsets. (Assigned
    at OFFSET_END instead, the end is looked up at the first fetch, which may come after
    the first records, or after all of them on a slow machine.)"""
    topic = Topics(settings).status
    consumer = clients.consumer(settings, "jobstream.demo")
    partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
    ends = [TopicPartition(topic, p, watermarks(consumer, TopicPartition(topic, p))[1])
            for p in sorted(partitions)]  # fmt: skip
    consumer.assign(ends)
    return consumer


def _submit(client: JobClient) -> dict[str, str]:
    """The demo's jobs; returns job id -> what the job shows."""
    now = datetime.now(UTC)
    soon = now + timedelta(seconds=2)
    requests = {
        "CSV aggregation": JobRequest(job_type="data.process", owner="demo",
                                      params={"group_by": "region", "metric": "units"}),
        "PNG chart": JobRequest(job_type="image.render", owner="demo", run_at=soon,
                                params={"title": "units by region", "values": [3, 5, 2, 8]}),
        "HTML report": JobRequest(job_type="report.generate", owner="demo", priority="HIGH",
                                  run_at=soon, params={"group_by": "product"}),
        "fails twice, then succeeds": JobRequest(job_type="data.process", owner="demo",
                                                 params={"fail_until_attempt": 3}),
        "poison, ends in the DLQ": JobRequest(job_type="image.render", owner="demo",
                                              params={"poison": True}),
        "weekday 09:00 Paris": JobRequest(job_type="report.generate", owner="demo",
                                          cron=CronSpec(expression="0 9 * * MON-FRI",
                                                        timezone="Europe/Paris")),
        "cancelled before its time": JobRequest(job_type="image.render", owner="demo",
                                                run_at=now + timedelta(seconds=30)),
    }  # fmt: skip
    ids = client.submit_many(requests.values())
    labels = dict(zip(ids, requests, strict=True))
    client.cancel(ids[-1], reason="no longer needed")
    workflow = client.submit_workflow([
        {"name": "aggregate", "job_type": "data.process",
         "params": {"group_by": "region", "metric": "units"}},
        {"name": "chart", "job_type": "image.render", "depends_on": ["aggregate"],
         "params": {"title": "units by region", "values": [4, 7, 3]}},
        {"name": "report", "job_type": "report.generate", "depends_on": ["chart"],
         "params": {"group_by": "region", "metric": "units"}},
    ], owner="demo")  # fmt: skip
    for name, job_id in workflow.steps.items():
        labels[job_id] = f"workflow {workflow.workflow_id[-6:]}: {name}"
    return labels


def _describe(status: JobStatus, label: str) -> str:
    line = f"  {status.state:<15} {status.job_type:<16} attempt {status.attempt}  {label}"
    if status.result_uri:
        line += f"  -> {status.result_uri}"
    elif status.result:
        line += f"  -> {status.result[:60]}{'...' if len(status.result) > 60 else ''}"
    if status.last_error and status.state != "SUCCEEDED":
        line += f"  ({status.last_error.error_type}: {status.last_error.message[:50]})"
    if status.waiting_for:
        line += f"  waiting for {', '.join(status.waiting_for)}"
    if status.next_fire_at_ms or (status.state == "SCHEDULED" and status.scheduled_at_ms):
        at = status.next_fire_at_ms or status.scheduled_at_ms or 0
        line += f"  next run {instant_of(at):%Y-%m-%d %H:%M} UTC"
    return line


class Story:
    """The demo's jobs and the latest state known of each: from the records read on
    jobs.status as they come, and, whenever some job is not settled yet, from a read of
    the whole topic (the jobs' real states), so that no record missed can stall it."""

    def __init__(self, settings: Settings, labels: dict[str, str]) -> None:
        self.settings = settings
        self.labels = labels
        self.latest: dict[str, JobStatus] = {}

    def tell(self, status: JobStatus) -> None:
        """Print a status of one of the demo's jobs when it says something new."""
        if status.job_id not in self.labels:
            return
        before = self.latest.get(status.job_id)
        self.latest[status.job_id] = status
        if before is None or (before.state, before.attempt) != (status.state, status.attempt):
            console.print(_describe(status, self.labels[status.job_id]),
                          highlight=False, soft_wrap=True)  # fmt: skip

    def state(self, job_id: str) -> str | None:
        status = self.latest.get(job_id)
        return None if status is None else status.state

    def unsettled(self, jobs: list[str] | None = None) -> list[str]:
        return [job for job in (jobs or list(self.labels)) if self.state(job) not in SETTLED]

    def read_real_states(self) -> None:
        try:
            statuses = read_statuses(self.settings, owner="demo", timeout_s=10)
        except JobstreamError as exc:  # the stream goes on; the next look may succeed
            console.print(f"  (could not read jobs.status whole: {exc})")
            return
        for job_id in self.labels:
            if job_id in statuses:
                self.tell(statuses[job_id])


def run_demo(settings: Settings, home: Path = Path(".jobstream"), base_port: int = 9400,
             timeout_s: float = 180.0) -> None:  # fmt: skip
    """Run the demo; raises JobstreamError when its jobs have not settled in ``timeout_s``
    after they were submitted."""
    stack = Stack(home)
    console.print("starting the pipeline: timers, status processor, retry router, 3 workers, "
                  "trigger processor")
    try:
        stack.start(
            components(base_port, triggers=True),
            timeout_s=300,
            progress=lambda names: console.print(f"  still starting: {', '.join(names)}"),
        )
        _run(settings, stack, timeout_s)
    finally:
        stack.stop()


def _run(settings: Settings, stack: Stack, timeout_s: float) -> None:
    reader = _status_reader(settings)
    try:
        with JobClient(settings) as client:
            story = Story(settings, _submit(client))
            console.print(f"submitted {len(story.labels)} jobs; their status as it changes:")
            cron_id = next(job for job, label in story.labels.items() if "Paris" in label)
            others = [job for job in story.labels if job != cron_id]
            paused = False
            started = last_look = time.monotonic()
            while time.monotonic() - started < timeout_s:
                # One batch holds several partitions' records: told in the order written.
                batch = sorted(reader.consume(200, timeout=0.2), key=lambda m: m.timestamp()[1])
                for message in batch:
                    value = message.value()
                    if message.error() is None and value and \
                            not is_internal(message.key(), message.headers()):  # fmt: skip
                        story.tell(decode_status(value))
                if time.monotonic() - last_look > LOOK_EVERY_S and story.unsettled():
                    story.read_real_states()
                    last_look = time.monotonic()
                    console.print(f"  ({time.monotonic() - started:.0f} s) waiting for: "
                                  f"{', '.join(story.labels[j] for j in story.unsettled())}",
                                  highlight=False, soft_wrap=True)  # fmt: skip
                if not paused and not story.unsettled(others):
                    client.pause(cron_id)
                    paused = True
                if paused and story.state(cron_id) == "PAUSED":
                    break
    finally:
        reader.close()
    if story.unsettled():
        story.read_real_states()
    unsettled = sorted(story.labels[job] for job in story.unsettled())
    if unsettled:
        raise JobstreamError(f"demo jobs did not settle in {timeout_s:.0f}s: {unsettled};"
                             f" logs in {stack.logs}")  # fmt: skip
    console.print(f"[green]every demo job settled[/green]; process logs in {stack.logs}; "
                  "`jobstream dlq list` shows the poison job")  # fmt: skip
