"""``jobstream topics grow``: an option missing or misplaced is named before any broker is
asked (the grow itself: tests/test_grow_partitions.py, tests/test_exec_grow.py)."""

from __future__ import annotations

from typer.testing import CliRunner

from jobstream._ops.command import app
from jobstream._pipeline.errors import ValidationError


def test_grow_needs_a_count_and_a_type_needs_the_execution_count() -> None:
    runner = CliRunner()
    neither = runner.invoke(app, ["topics", "grow"])
    assert isinstance(neither.exception, ValidationError)
    assert neither.exception.field == "--partitions"
    assert "--exec-partitions" in str(neither.exception)
    typed = runner.invoke(app, ["topics", "grow", "--partitions", "12", "--type", "image.render"])
    assert isinstance(typed.exception, ValidationError)
    assert typed.exception.field == "--type"
    below = runner.invoke(app, ["topics", "grow", "--exec-partitions", "0"])
    assert below.exit_code == 2 and "--exec-partitions" in below.output
