"""Durations on the command line: ``parse_duration`` and the option type built on it."""

from __future__ import annotations

import pytest
import typer
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from jobstream._pipeline.durations import (
    FORM,
    DurationError,
    duration_option,
    format_duration,
    parse_duration,
)
from jobstream._pipeline.errors import ValidationError


@pytest.mark.parametrize(
    ("text", "ms"),
    [
        ("250ms", 250),
        ("0ms", 0),
        ("0s", 0),
        ("30s", 30_000),
        ("2.5s", 2_500),
        ("0.1s", 100),
        ("0.001s", 1),
        ("5m", 300_000),
        ("2h", 7_200_000),
        ("1.25h", 4_500_000),
        ("7d", 604_800_000),
        (" 90s ", 90_000),
        ("2 h", 7_200_000),
    ],
)
def test_good_forms(text: str, ms: int) -> None:
    assert parse_duration(text) == ms


@pytest.mark.parametrize(
    "text",
    ["30", "2.5", "", "s", "ms", "-1s", "+1s", "1.s", ".5s", "1e3ms", "2H", "1w", "1y", "1 2s",
     "1s 2ms", "1min", "1sec", "PT1S", "nan s", "2026-05-01"],
)  # fmt: skip
def test_bad_forms_name_the_option_and_the_form(text: str) -> None:
    with pytest.raises(DurationError) as caught:
        parse_duration(text, option="--lease")
    error = caught.value
    assert error.field == "--lease"
    assert str(error) == f"--lease: {text!r} is not a duration; expected {FORM}"
    assert "a number with a unit: ms, s, m, h or d" in str(error)
    assert isinstance(error, ValidationError)


@pytest.mark.parametrize("text", ["0.0005s", "1.5ms", "0.1ms"])
def test_finer_than_a_millisecond_is_refused_not_rounded(text: str) -> None:
    with pytest.raises(DurationError) as caught:
        parse_duration(text, option="--tick")
    assert str(caught.value) == f"--tick: {text!r} is finer than a millisecond"


@pytest.mark.parametrize(
    ("ms", "text"),
    [(0, "0s"), (1, "1ms"), (100, "100ms"), (2_500, "2500ms"), (30_000, "30s"),
     (90_000, "90s"), (300_000, "5m"), (7_200_000, "2h"), (86_400_000, "1d")],
)  # fmt: skip
def test_format_uses_the_largest_whole_unit(ms: int, text: str) -> None:
    assert format_duration(ms) == text


@given(st.integers(min_value=0, max_value=10**12))
def test_format_reads_back(ms: int) -> None:
    assert parse_duration(format_duration(ms)) == ms


def test_format_refuses_a_negative_duration() -> None:
    with pytest.raises(ValueError, match="not negative"):
        format_duration(-1)


# -- the option type, through typer --------------------------------------------------------

LeaseOption = duration_option("30s", "--lease", minimum="100ms", maximum="1h", help="Lease.")


def app() -> typer.Typer:
    command = typer.Typer()

    @command.command()
    def run(lease_ms: int = LeaseOption) -> None:
        typer.echo(repr(lease_ms))

    return command


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app(), list(args))
    return result.exit_code, result.output


def test_the_command_gets_milliseconds() -> None:
    assert invoke("--lease", "2.5s") == (0, "2500\n")
    assert invoke() == (0, "30000\n")


def test_a_bad_value_is_a_usage_error_naming_the_option_and_the_form() -> None:
    code, output = invoke("--lease", "30")
    assert code == 2
    text = " ".join(output.replace("│", " ").split())
    assert "Invalid value for '--lease'" in text
    assert "'30' is not a duration; expected a number with a unit: ms, s, m, h or d" in text


@pytest.mark.parametrize(("value", "message"), [("99ms", "'99ms' is less than 100ms"),
                                                ("2h", "'2h' is more than 1h")])  # fmt: skip
def test_bounds(value: str, message: str) -> None:
    code, output = invoke("--lease", value)
    assert code == 2
    assert message in " ".join(output.replace("│", " ").split())


def test_help_shows_the_default_as_typed() -> None:
    result = CliRunner().invoke(app(), ["--help"])
    text = " ".join(result.output.replace("│", " ").split())
    assert "--lease <duration>" in text
    assert "[default: 30s]" in text
