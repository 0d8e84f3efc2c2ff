"""``jobstream status-processor``'s options reach the runner."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from pipeline.config import Settings
from pipeline.status import cli
from pipeline.status.runner import StatusOptions


def test_options_reach_the_runner(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    started: list[StatusOptions] = []

    class Runner:  # the loop itself is tested against the broker (test_runner.py)
        def __init__(self, settings: Settings, options: StatusOptions) -> None:
            started.append(options)

        def run(self, stop: threading.Event) -> None:
            pass

    monkeypatch.setattr(cli, "StatusRunner", Runner)
    monkeypatch.setattr(cli, "stop_on_signals", lambda: threading.Event())
    app = typer.Typer()
    app.command()(cli.status_processor)

    def run(*args: str) -> StatusOptions:
        result = CliRunner().invoke(app, ["--state-dir", str(tmp_path), "--metrics-port", "0",
                                          *args])  # fmt: skip
        assert result.exit_code == 0, result.output
        return started.pop()

    default = run()
    assert (default.commit_interval_ms, default.lease_ms) == (StatusOptions.commit_interval_ms,
                                                              30_000)  # fmt: skip
    chosen = run("--commit-interval-ms", "250", "--lease-s", "2.5")
    assert (chosen.commit_interval_ms, chosen.lease_ms, chosen.state_dir) == (250, 2500, tmp_path)
    refused = CliRunner().invoke(app, ["--commit-interval-ms", "-1"])
    assert refused.exit_code != 0
