"""The engine's commands, and how every ``jobstream`` command ends on an error.

``register`` adds the engine's processes and tools to a Typer app; ``run`` runs an app
and turns a JobstreamError into a message and a documented exit code. The full
``jobstream`` command, which adds the broker, topics, demo and benchmark commands, is
composed in ``ops/command.py``: the engine may not see ``ops/``. ``python -m jobstream._pipeline``
runs the engine's commands alone (what the stack and the benchmarks start).
"""

from __future__ import annotations

import logging
import sys

import typer

from jobstream._pipeline.console.tail import EPILOG as TAIL_EPILOG
from jobstream._pipeline.console.tail import tail
from jobstream._pipeline.dlq.cli import dlq_app
from jobstream._pipeline.errors import (
    BrokerError,
    ConfigurationError,
    JobstreamError,
    TopicMismatchError,
    ValidationError,
)
from jobstream._pipeline.jobs.cli import EXIT_INVALID
from jobstream._pipeline.jobs.cli import register as register_job_commands
from jobstream._pipeline.jobs.signal_cli import signal
from jobstream._pipeline.jobs.workflow_cli import workflow_app
from jobstream._pipeline.lifeline import watch_supervisor
from jobstream._pipeline.limits.cli import limits_app
from jobstream._pipeline.logs import configure_logging
from jobstream._pipeline.quotas.cli import quotas_app
from jobstream._pipeline.retry.cli import retry_router
from jobstream._pipeline.runtime.collector import tune_collector
from jobstream._pipeline.status.cli import status_processor
from jobstream._pipeline.status.query import status
from jobstream._pipeline.timers.cli import timers
from jobstream._pipeline.triggers.cli import trigger_processor, triggers_app
from jobstream._pipeline.version import VERSION
from jobstream._pipeline.worker.cli import worker

log = logging.getLogger(__name__)

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


def new_app(*, help: str, epilog: str | None = None) -> typer.Typer:
    """An empty ``jobstream`` app with the ``--log-level`` option every process takes."""
    app = typer.Typer(
        name="jobstream",
        help=help,
        epilog=epilog,
        no_args_is_help=True,
        pretty_exceptions_enable=False,
    )
    app.callback()(_setup)
    return app


def _print_version(asked: bool) -> None:
    if asked:
        typer.echo(f"jobstream {VERSION}")
        raise typer.Exit()


def _setup(
    log_level: str = typer.Option("INFO", "--log-level", envvar="JOBSTREAM_LOG_LEVEL"),
    version: bool = typer.Option(False, "--version", is_eager=True, callback=_print_version,
                                 help="Print jobstream's version and exit."),
) -> None:
    configure_logging(log_level)


def register(app: typer.Typer) -> None:
    """Add the engine's commands to *app*: its processes, ``status``, ``dlq``, the job
    commands (``submit``, ``cancel``, ...), ``workflow`` and ``signal``."""
    app.command("timers")(timers)
    app.command("status-processor")(status_processor)
    app.command("status")(status)
    app.command("tail", epilog=TAIL_EPILOG)(tail)
    app.command("retry-router")(retry_router)
    app.command("trigger-processor")(trigger_processor)
    app.add_typer(triggers_app, name="triggers")
    app.add_typer(dlq_app, name="dlq")
    app.add_typer(limits_app, name="limits")
    app.add_typer(quotas_app, name="quotas")
    app.command("worker")(worker)
    register_job_commands(app)
    app.add_typer(workflow_app, name="workflow")
    app.command("signal")(signal)


def run(app: typer.Typer) -> None:
    """Run *app*; a JobstreamError ends it with a message and a documented exit code.

    A process started by a supervisor (ops/stack.py) also ends when the supervisor does."""
    watch_supervisor()
    tune_collector()
    try:
        app()  # standalone: usage errors and typer.Exit end the process themselves
    except JobstreamError as exc:
        log.debug("command failed", exc_info=True)
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(
            next((code for kind, code in _EXIT_CODES.items() if isinstance(exc, kind)), EXIT_ERROR)
        )


app = new_app(help="The jobstream engine's commands (the full command is `jobstream`).")
register(app)


def main() -> None:
    """``python -m jobstream._pipeline``: the engine's commands without those of ops/."""
    run(app)
