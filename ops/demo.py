"""``jobstream demo``: real jobs through the running stack, shown as they happen.

Starts a timer processor in this process, submits one-off jobs of three types (one of
them cancelled before its time) and a weekday cron job in Europe/Paris, then prints
every lifecycle event from jobs.events until each one-off job has fired.
"""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from confluent_kafka import OFFSET_END, Consumer, TopicPartition
from rich.console import Console

from pipeline.config import Settings
from pipeline.errors import JobstreamError
from pipeline.jobs.client import JobClient
from pipeline.jobs.model import JobRequest
from pipeline.kafka import clients
from pipeline.scheduling import CronSpec
from pipeline.serde import make_serde
from pipeline.timers.runner import TimerOptions, TimerRunner
from pipeline.topics import Topics

console = Console()


def _events_reader(settings: Settings) -> Consumer:
    """A consumer at the end of jobs.events, so the demo shows only its own jobs."""
    topics = Topics(settings)
    consumer = clients.consumer(settings, "jobstream.demo")
    consumer.assign([
        TopicPartition(topics.events, p, OFFSET_END) for p in range(settings.events_partitions)
    ])  # fmt: skip
    return consumer


def run_demo(settings: Settings, timeout_s: float = 90.0) -> None:
    stop = threading.Event()
    runner = TimerRunner(settings, TimerOptions(instance_id="demo",
                                                state_dir=Path(".jobstream/state")))  # fmt: skip
    timers = threading.Thread(target=runner.run, args=(stop,), name="timers", daemon=True)
    timers.start()
    reader = _events_reader(settings)
    _, deserialize = make_serde(settings.schema_registry_url)
    with JobClient(settings) as client:
        now = datetime.now(UTC)
        one_offs = client.submit_many([
            JobRequest(job_type="data.process", owner="demo", params={"input": "sales.csv"}),
            JobRequest(job_type="report.generate", owner="demo", priority="HIGH",
                       run_at=now + timedelta(seconds=3), params={"report": "daily"}),
            JobRequest(job_type="image.render", owner="demo", run_at=now + timedelta(seconds=5),
                       params={"width": 640, "height": 480}),
        ])  # fmt: skip
        doomed = client.submit(job_type="image.render", owner="demo",
                               run_at=now + timedelta(seconds=8))  # fmt: skip
        weekly = client.submit(job_type="report.generate", owner="demo",
                               cron=CronSpec(expression="0 9 * * MON-FRI",
                                             timezone="Europe/Paris"))  # fmt: skip
        client.cancel(doomed, reason="no longer needed")
        console.print(f"submitted {len(one_offs) + 2} jobs; waiting for them to fire ...")
        fired: set[str] = set()
        deadline = time.monotonic() + timeout_s
        paused = False
        try:
            while time.monotonic() < deadline and not (fired >= set(one_offs) and paused):
                if fired >= set(one_offs) and not paused:
                    client.pause(weekly)
                    paused = True
                for message in reader.consume(100, timeout=0.2):
                    if message.error() is not None:
                        continue
                    event = deserialize(message.value()).data
                    if event["owner"] != "demo":
                        continue
                    if event["kind"] == "FIRED":
                        fired.add(event["job_id"])
                    console.print(_line(event), highlight=False, soft_wrap=True)
        finally:
            reader.close()
            stop.set()
            timers.join(30)
        if not fired >= set(one_offs):
            raise JobstreamError(f"only {len(fired)} of {len(one_offs)} demo jobs fired")
        console.print(
            "[green]every one-off job fired; the cron job is scheduled, then paused[/green]"
        )


def _line(event: dict[str, Any]) -> str:
    """One lifecycle event: when, what, which job, and for a firing how late it was."""
    at = datetime.fromtimestamp(event["at_ms"] / 1000, UTC).strftime("%H:%M:%S.%f")[:-3]
    line = f"  {at}  {event['kind']:<10} {event['job_type']:<16} {event['job_id']}"
    scheduled = event.get("scheduled_at_ms")
    if event["kind"] == "FIRED":
        line += f"  late by {event['lateness_ms']} ms"
    elif scheduled:
        line += f"  next run {datetime.fromtimestamp(scheduled / 1000, UTC):%Y-%m-%d %H:%M:%S} UTC"
    return line
