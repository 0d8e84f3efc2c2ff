"""``jobstream backfill``'s own checks, made before the API is called."""

from __future__ import annotations

import pytest
import typer
from typer.testing import CliRunner

from jobstream._connectors import cli
from jobstream._connectors.cli import parse_rate, register
from jobstream._ops.kafka.ports import free_base_port
from jobstream._pipeline.errors import ValidationError

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


class FakeApi:
    """The answers of the API to ``backfill``: the POST, then pages of the labelled jobs
    whose states move on at each poll."""

    def __init__(self, ids: list[str]) -> None:
        self.ids = ids
        self.polls = 0
        self.posted: list[tuple[str, dict]] = []

    def post(self, _settings: object, path: str, body: dict) -> dict:
        self.posted.append((path, body))
        return {"job_id": JOB_ID, "rate": body["rate"], "submitted": 2, "existing": 1,
                "occurrences": [{"job_id": job_id, "occurrence": f"2026-03-01T0{i}:00:00Z",
                                 "created": i > 0} for i, job_id in enumerate(self.ids)]}

    def get(self, _settings: object, path: str, params: dict) -> dict:
        assert path == "/api/v1/jobs" and params["label"] == f"backfill.of={JOB_ID}"
        if params["cursor"] is None:
            self.polls += 1
        ended = {1: ["SUCCEEDED"], 2: ["SUCCEEDED", "DEAD_LETTERED", "RUNNING"]}
        states = ended.get(self.polls, ["SUCCEEDED", "DEAD_LETTERED", "SUCCEEDED"])
        jobs = [{"job_id": job_id, "state": state}
                for job_id, state in zip(self.ids, states, strict=False)]
        jobs.append({"job_id": "K-OTHER-BACKFILL", "state": "SUCCEEDED"})
        page = 0 if params["cursor"] is None else 1  # two pages: the cursor is followed
        half = len(jobs) // 2
        return {"items": jobs[:half] if page == 0 else jobs[half:],
                "next_cursor": "next" if page == 0 else None}


def test_backfill_prints_the_ids_then_follows_them_until_each_has_ended(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    api = FakeApi(["K1", "K2", "K3"])
    monkeypatch.setattr(cli, "_post", api.post)
    monkeypatch.setattr(cli, "_get", api.get)
    monkeypatch.setattr(cli, "FOLLOW_EVERY_S", 0.0)
    app = typer.Typer()
    register(app)
    result = CliRunner().invoke(app, ["backfill", JOB_ID, *RANGE, "--rate", "120/m"])
    assert result.exit_code == 0, result.output
    assert result.stdout.split() == ["K1", "K2", "K3"]
    assert api.posted == [(f"/api/v1/jobs/{JOB_ID}/backfill",
                           {"from": RANGE[1], "to": RANGE[3], "rate": 2.0, "dry_run": False})]
    assert api.polls == 3  # ended: 1, then 2 of 3, then 3
    assert "2 sent at 2/s, 1 run or sent already" in result.stderr
    assert "ended: 1 DEAD_LETTERED, 2 SUCCEEDED" in result.stderr


def test_a_dry_run_lists_the_occurrences_and_follows_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    api = FakeApi(["K1", "K2"])
    monkeypatch.setattr(cli, "_post", api.post)
    monkeypatch.setattr(cli, "_get", api.get)
    app = typer.Typer()
    register(app)
    result = CliRunner().invoke(app, ["backfill", JOB_ID, *RANGE, "--dry-run"],
                                env={"COLUMNS": "100"})  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "2026-03-01T00:00:00Z" in result.stdout and "K2" in result.stdout
    assert api.posted[0][1]["dry_run"] is True and api.polls == 0
    assert "dry run: nothing sent" in result.stderr
