"""The ``jobstream`` command: one entry point for every process and tool."""

from __future__ import annotations

import logging
import sys

import typer

from ops.bench.e2e import bench
from ops.bench.timers import bench_timers
from ops.cli import demo, kafka_app, pipeline, topics_app
from pipeline.dlq.cli import dlq_app
from pipeline.errors import (
    BrokerError,
    ConfigurationError,
    JobstreamError,
    TopicMismatchError,
    ValidationError,
)
from pipeline.jobs.cli import EXIT_INVALID
from pipeline.jobs.cli import register as register_job_commands
from pipeline.logs import configure_logging
from pipeline.retry.cli import retry_router
from pipeline.status.cli import status_processor
from pipeline.status.query import status
from pipeline.timers.cli import timers
from pipeline.worker.cli import worker

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_CONFIG = 3
EXIT_BROKER = 4
EXIT_TOPICS = 5

_EXIT_CODES: dict[type[JobstreamError], int] = {
    ValidationError: EXIT_INVALID,
    ConfigurationError: EXIT_CONFIG,
    BrokerError: EXIT_BROKER,
    TopicMismatchError: EXIT_TOPICS,
}

EPILOG = """Examples:

  jobstream kafka up                 # local broker on 127.0.0.1:9092

  jobstream kafka up --nodes 3       # 3-node cluster for fault tests

  jobstream topics create            # every topic of the design

  jobstream timers                   # a timer processor

  jobstream submit --type report.generate --owner acme --cron "0 9 * * MON-FRI" --tz Europe/Paris
"""

app = typer.Typer(
    name="jobstream",
    help="A job scheduler built on Apache Kafka.",
    epilog=EPILOG,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
app.add_typer(kafka_app, name="kafka")
app.add_typer(topics_app, name="topics")
app.command("demo")(demo)
app.command("pipeline")(pipeline)
app.command("bench")(bench)
app.command("bench-timers")(bench_timers)
app.command("timers")(timers)
app.command("status-processor")(status_processor)
app.command("status")(status)
app.command("retry-router")(retry_router)
app.add_typer(dlq_app, name="dlq")
app.command("worker")(worker)
register_job_commands(app)


@app.callback()
def _setup(
    log_level: str = typer.Option("INFO", "--log-level", envvar="JOBSTREAM_LOG_LEVEL"),
) -> None:
    configure_logging(log_level)


def main() -> None:
    """Run the CLI; a JobstreamError ends it with a message and a documented exit code."""
    try:
        app()  # standalone: usage errors and typer.Exit end the process themselves
    except JobstreamError as exc:
        logging.getLogger("jobstream").debug("command failed", exc_info=True)
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(
            next((code for kind, code in _EXIT_CODES.items() if isinstance(exc, kind)), EXIT_ERROR)
        )
