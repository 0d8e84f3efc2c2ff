"""``jobstream backfill``'s own checks, made before the API is called."""

from __future__ import annotations

import pytest
import typer
from typer.testing import CliRunner

from connectors.cli import parse_rate, register
from ops.kafka.ports import free_base_port
from pipeline.errors import ValidationError

JOB_ID = "01JD3W6Q8Z5X7M2K4N9P0R1S2T"
RANGE = ["--from", "2026-03-01T00:00Z", "--to", "2026-03-02T00:00Z"]


@pytest.mark.parametrize(("text", "rate"), [("5/s", 5.0), ("5", 5.0), ("300/m", 5.0),
                                            ("36/h", 0.01), (" 2.5/s ", 2.5)])  # fmt: skip
def test_a_rate_is_per_second_minute_or_hour(text: str, rate: float) -> None:
    assert parse_rate(text) == pytest.approx(rate)


@pytest.mark.parametrize("text", ["fast", "5/d", "0/s", "5000/s", "1/h", "/s", "nan"])
def test_a_bad_rate_names_rate(text: str) -> None:
    with pytest.raises(ValidationError) as caught:
        parse_rate(text)
    assert caught.value.field == "rate"


@pytest.mark.parametrize(("args", "field"), [
    ([JOB_ID, "--from", "2026-03-01", "--to", "2026-03-02T00:00Z"], "from"),
    ([JOB_ID, "--from", "2026-03-01T00:00Z", "--to", "soon"], "to"),
    ([JOB_ID, *RANGE, "--rate", "lots"], "rate"),
])  # fmt: skip
def test_a_bad_argument_exits_2_naming_it_before_the_api_is_called(
    args: list[str], field: str
) -> None:
    app = typer.Typer()
    register(app)
    nobody = f"http://127.0.0.1:{free_base_port(1)}"
    result = CliRunner().invoke(app, ["backfill", *args], env={"JOBSTREAM_API_URL": nobody})
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"error: {field}: "), result.stderr
    assert result.stdout == ""
