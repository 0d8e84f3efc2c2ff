"""The ``jobstream`` command: one entry point for every process and tool.

Composed here because ops/ is the one layer that may see the others: the engine's
commands come from ``jobstream._pipeline.cli.register``, and this module adds the broker, topics,
demo, pipeline and benchmark commands of ops/. ``python -m jobstream`` runs the same command.
"""

from __future__ import annotations

import signal

from jobstream._connectors.cli import register as register_connectors
from jobstream._ops.bench.api import bench_api
from jobstream._ops.bench.e2e import bench
from jobstream._ops.bench.timers import bench_timers
from jobstream._ops.cli import demo, kafka_app, pipeline, topics_app
from jobstream._ops.deploy.cli import deploy_app
from jobstream._ops.faults.cli import faults_app
from jobstream._ops.tenants_cli import owners_app, quotas_app
from jobstream._pipeline.cli import new_app, register, run

EPILOG = """Examples:

  jobstream kafka up                 # local broker on 127.0.0.1:9092

  jobstream kafka up --nodes 3       # 3-node cluster for fault tests

  jobstream topics create            # every topic of the design

  jobstream timers                   # a timer processor

  jobstream submit --type report.generate --owner acme --cron "0 9 * * MON-FRI" --tz Europe/Paris

  jobstream api                      # the HTTP API on 127.0.0.1:8080

  jobstream deploy render --profile production | kubectl apply -f -
"""

app = new_app(help="A job scheduler built on Apache Kafka.", epilog=EPILOG)
kafka_app.add_typer(owners_app, name="owners")
kafka_app.add_typer(quotas_app, name="quotas")
app.add_typer(kafka_app, name="kafka")
app.add_typer(topics_app, name="topics")
app.command("demo")(demo)
app.command("pipeline")(pipeline)
app.command("bench")(bench)
app.command("bench-timers")(bench_timers)
app.command("bench-api")(bench_api)
app.add_typer(faults_app, name="faults")
app.add_typer(deploy_app, name="deploy")
register(app)
register_connectors(app)


def main() -> None:
    """The ``jobstream`` console script.

    SIGTERM stops a command as Ctrl-C does, so that a benchmark or a fault run stopped
    by a supervisor or ``kill`` still stops the processes it started (their ``finally``
    blocks run); the engine's processes put their own graceful handler in its place."""
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    run(app)
