"""Command-line options the benchmark commands share, defined once."""

from __future__ import annotations

from pathlib import Path

import typer

ExecPartitionsOption = typer.Option(6, "--exec-partitions", min=1)
BootstrapOption = typer.Option(
    None, "--bootstrap", envvar="JOBSTREAM_BOOTSTRAP_SERVERS",
    help="Use this broker instead of starting one.",
)  # fmt: skip
PortOption = typer.Option(39092, "--port", help="Port of the local broker started otherwise.")
WorkdirOption = typer.Option(Path(".jobstream/bench"), "--workdir")
KafkaHomeOption = typer.Option(
    None, "--kafka-home", help="Where the local broker lives (default: beside --workdir); "
    "with --bootstrap, a broker there is measured too.",
)  # fmt: skip
OutOption = typer.Option(None, "--out", help="Write the results here as JSON.")
