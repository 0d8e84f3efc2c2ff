"""Command-line options shared by the long-running processes, defined once."""

from __future__ import annotations

from pathlib import Path

import typer

InstanceIdOption = typer.Option(
    "0", "--instance-id", envvar="JOBSTREAM_INSTANCE_ID",
    help="Stable id of this process among its component's processes; it names the "
    "transactional id and the group member, so keep it with its state directory.",
)  # fmt: skip
StateDirOption = typer.Option(
    Path(".jobstream/state"), "--state-dir", envvar="JOBSTREAM_STATE_DIR",
    help="Where RocksDB stores live.",
)  # fmt: skip
MetricsPortOption = typer.Option(
    0, "--metrics-port", envvar="JOBSTREAM_METRICS_PORT",
    help="Serve /metrics and /healthz on this port (0: off).",
)  # fmt: skip
