"""``jobstream status-processor``'s options reach the runner."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from jobstream._pipeline import cli_options
from jobstream._pipeline.config import Settings
from jobstream._pipeline.runtime import RunnerOptions
from jobstream._pipeline.status import cli
from jobstream._pipeline.status.logic import StatusPolicy
from jobstream._pipeline.status.processor import STATUS_OPTIONS


class Watch:
    def stop(self) -> None:
        pass


def test_options_reach_the_runner(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    started: list[tuple[RunnerOptions, StatusPolicy]] = []

    class Runner:  # the loop itself is tested against the broker (test_runner.py)
        name = "status"

        def __init__(
            self, settings: Settings, options: RunnerOptions, policy: StatusPolicy
        ) -> None:
            started.append((options, policy))

        def run(self, stop: threading.Event) -> None:
            pass

    monkeypatch.setattr(cli, "status_runner", Runner)
    monkeypatch.setattr(cli_options, "stop_on_signals", lambda: threading.Event())
    monkeypatch.setattr(cli_options, "watch_clock", lambda *_: Watch())  # no broker here
    app = typer.Typer()
    app.command()(cli.status_processor)

    def run(*args: str) -> tuple[RunnerOptions, StatusPolicy]:
        result = CliRunner().invoke(app, ["--state-dir", str(tmp_path), "--metrics-port", "0",
                                          *args])  # fmt: skip
        assert result.exit_code == 0, result.output
        return started.pop()

    default, default_policy = run()
    assert (default.commit_interval_ms, default_policy.lease_ms) == (
        STATUS_OPTIONS.commit_interval_ms, 30_000)  # fmt: skip
    chosen, chosen_policy = run("--commit-interval", "250ms", "--lease", "2.5s")
    assert (chosen.commit_interval_ms, chosen_policy.lease_ms, chosen.state_dir) == (
        250,
        2500,
        tmp_path,
    )
    refused = CliRunner().invoke(app, ["--commit-interval", "-1ms"])
    assert refused.exit_code != 0
