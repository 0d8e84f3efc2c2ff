"""Command-line options the benchmark commands share, defined once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from jobstream._pipeline.durations import duration_option

ExecPartitionsOption = typer.Option(6, "--exec-partitions", min=1)
BootstrapOption = typer.Option(
    None, "--bootstrap", envvar="JOBSTREAM_BOOTSTRAP_SERVERS",
    help="Use this broker instead of starting one.",
)  # fmt: skip
PortOption = typer.Option(29092, "--port", help="Port of the local broker started otherwise.")
DEFAULT_WORKDIR = Path(".jobstream/bench")
WorkdirOption = typer.Option(DEFAULT_WORKDIR, "--workdir")
KafkaHomeOption = typer.Option(
    None, "--kafka-home", help="Where the local broker lives (default: beside --workdir); "
    "with --bootstrap, a broker there is measured too.",
)  # fmt: skip
OutOption = typer.Option(None, "--out", help="Write the results here as JSON.")


def kafka_home_of(kafka_home: Path | None, workdir: Path = DEFAULT_WORKDIR) -> Path:
    """``--kafka-home``, or the local broker's home beside ``--workdir``."""
    return kafka_home or workdir.parent / "bench-kafka"


def py_spy_option(what: str) -> Any:
    """``--py-spy``: how long py-spy profiles, in ms (0: not at all); ``what`` names what it
    profiles and from when, since each benchmark profiles its own processes."""
    return duration_option("0s", "--py-spy", help=f"Profile {what}; needs py-spy.")
