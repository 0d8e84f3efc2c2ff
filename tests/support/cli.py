"""The ``jobstream`` command run in-process (typer's CliRunner) against a test's broker and
topics."""

from __future__ import annotations

from collections.abc import Callable

from typer.testing import CliRunner, Result

from jobstream._pipeline.cli import app
from jobstream._pipeline.topics import Topics


def broker_env(topics: Topics) -> dict[str, str]:
    """The JOBSTREAM_* settings that point a command at the test's broker and topics."""
    return {
        "JOBSTREAM_BOOTSTRAP_SERVERS": topics.settings.bootstrap_servers,
        "JOBSTREAM_TOPIC_PREFIX": topics.settings.topic_prefix,
        "JOBSTREAM_TIMER_PARTITIONS": str(topics.settings.timer_partitions),
    }


def run(topics: Topics, *args: str) -> Result:
    """``jobstream <args>`` against the test's broker, whatever its exit code."""
    return CliRunner().invoke(app, list(args), env=broker_env(topics))


def command(topics: Topics, *name: str) -> Callable[..., str]:
    """``jobstream <name> ...`` as a function of the rest of its arguments: its output, its
    exit code 0 asserted."""

    def invoke(*args: str) -> str:
        result = run(topics, *name, *args)
        assert result.exit_code == 0, result.output
        return result.output

    return invoke
