"""``jobstream demo``: the whole pipeline running real jobs, shown as their status changes.

Starts the timers, the status processor, the retry router and one worker per demo job
type (ops/demo_jobs) as processes, then submits: one-off jobs of the three types, a
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

from confluent_kafka import OFFSET_END, Consumer, TopicPartition
from rich.console import Console

from ops.stack import Stack, components
from pipeline.config import Settings
from pipeline.errors import JobstreamError
from pipeline.jobs.client import JobClient
from pipeline.jobs.model import JobRequest
from pipeline.kafka import clients
from pipeline.scheduling import CronSpec
from pipeline.serde import JobStatus, decode_status
from pipeline.topics import Topics

console = Console()

SETTLED = {"SUCCEEDED", "DEAD_LETTERED", "CANCELLED", "PAUSED"}


def _status_reader(settings: Settings) -> Consumer:
    """A consumer at the end of jobs.status, so the demo shows only its own jobs."""
    topic = Topics(settings).status
    consumer = clients.consumer(settings, "jobstream.demo")
    consumer.assign([TopicPartition(topic, p, OFFSET_END)
                     for p in range(settings.status_partitions)])  # fmt: skip
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
        line += f"  next run {datetime.fromtimestamp(at / 1000, UTC):%Y-%m-%d %H:%M} UTC"
    return line


def run_demo(settings: Settings, home: Path = Path(".jobstream"), timeout_s: float = 120.0) -> None:
    stack = Stack(home)
    console.print("starting the pipeline: timers, status processor, retry router, 3 workers")
    stack.start(components())
    reader = _status_reader(settings)
    try:
        with JobClient(settings) as client:
            labels = _submit(client)
            console.print(f"submitted {len(labels)} jobs; their status as it changes:")
            latest: dict[str, str] = {}
            cron_id = next(job for job, label in labels.items() if "Paris" in label)
            paused = False
            deadline = time.monotonic() + timeout_s
            while time.monotonic() < deadline:
                for message in reader.consume(200, timeout=0.2):
                    value = message.value()
                    if message.error() is not None or value is None:
                        continue
                    status = decode_status(value)
                    if status.job_id in labels:
                        latest[status.job_id] = status.state
                        console.print(_describe(status, labels[status.job_id]),
                                      highlight=False, soft_wrap=True)  # fmt: skip
                others = [job for job in labels if job != cron_id]
                if not paused and all(latest.get(job) in SETTLED for job in others):
                    client.pause(cron_id)
                    paused = True
                if paused and latest.get(cron_id) == "PAUSED":
                    break
    finally:
        reader.close()
        stack.stop()
    unsettled = {labels[job] for job in labels if latest.get(job) not in SETTLED}
    if unsettled:
        raise JobstreamError(f"demo jobs did not settle in {timeout_s:.0f}s: {sorted(unsettled)};"
                             f" logs in {stack.logs}")  # fmt: skip
    console.print(f"[green]every demo job settled[/green]; process logs in {stack.logs}; "
                  "`jobstream dlq list` shows the poison job")  # fmt: skip
