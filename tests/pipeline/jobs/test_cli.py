"""``submit``, ``cancel``, ``pause``, ``resume``, ``reschedule`` as registered on a Typer app."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, ClassVar

import pytest
import typer
from typer.testing import CliRunner

from jobstream._ops.kafka.ports import free_base_port
from jobstream._pipeline.clock import ms_of, now_ms
from jobstream._pipeline.jobs import JobRequest, idempotent_job_id, is_job_id
from jobstream._pipeline.jobs import cli as cli_module
from jobstream._pipeline.jobs.cli import EXIT_INVALID, register, requester
from jobstream._pipeline.model import records
from jobstream._pipeline.scheduling import CronSpec
from jobstream._pipeline.serde import Event
from jobstream._pipeline.topics import Topics
from tests.pipeline.jobs.intake import read_intake
from tests.support.cli import broker_env

JOB_ID = "01JD3W6Q8Z5X7M2K4N9P0R1S2T"


def make_app() -> typer.Typer:
    app = typer.Typer()
    register(app)
    return app


def test_register_adds_the_six_commands() -> None:
    names = {command.name for command in make_app().registered_commands}
    assert names == {"submit", "cancel", "trigger", "pause", "resume", "reschedule"}


@pytest.fixture
def unreachable_env() -> dict[str, str]:
    """Settings pointing at a port nobody listens on: a refusal must not need the broker."""
    return {"JOBSTREAM_BOOTSTRAP_SERVERS": f"127.0.0.1:{free_base_port(1)}"}


SUBMIT = ["submit", "--type", "report.generate", "--owner", "acme"]
POLICY_OPTIONS = [  # option, CronSchedule field, a value it takes, values it refuses
    ("--skipped-hour", "skipped_hour", "skip", ["later"]),
    ("--repeated-hour", "repeated_hour", "both", ["second"]),
    ("--misfire", "misfire", "run-all", ["retry"]),
    ("--catchup-window", "catchup_window_ms", "1h", ["60"]),
    ("--overlap", "overlap", "skip", ["queue"]),
    ("--jitter", "jitter_ms", "30s", ["-5s", "a while"]),
    ("--max-runs", "max_runs", "3", ["0", "ten", "3000000000"]),
    ("--start-at", "start_at_ms", "2026-12-01T00:00Z", ["2026-12-01T00:00"]),
    ("--end-at", "end_at_ms", "2026-12-01T00:00Z", ["tomorrow"]),
]


@pytest.mark.parametrize(
    ("args", "field"),
    [
        ([*SUBMIT, "--cron", "0 9 * * MON-FRI", "--tz", "Mars/Base"], "spec.cron.timezone"),
        ([*SUBMIT, "--cron", "0 9 * *"], "spec.cron.expression"),
        ([*SUBMIT, "--tz", "Europe/Paris"], "spec.cron.timezone"),
        ([*SUBMIT, "--at", "2026-12-01T09:00", "--cron", "0 9 * * *"], "spec.run_at_ms"),
        ([*SUBMIT, "--at", "2026-12-01T09:00Z", "--cron", "0 9 * * *"], "spec.cron"),
        ([*SUBMIT, "--at", "1999-12-01T09:00Z"], "spec.run_at_ms"),
        ([*SUBMIT, "--params", "[1, 2]"], "spec.params"),
        ([*SUBMIT, "--params", "@/no/such/file.json"], "spec.params"),
        ([*SUBMIT, "--priority", "urgent"], "spec.priority"),
        ([*SUBMIT, "--timeout", "soon"], "spec.timeout_ms"),
        ([*SUBMIT, "--timeout", "0s"], "spec.timeout_ms"),
        ([*SUBMIT, "--max-attempts", "0"], "spec.retry.max_attempts"),
        ([*SUBMIT, "--deadline", "soon"], "spec.deadline_ms"),
        ([*SUBMIT, "--deadline", "0s"], "spec.deadline_ms"),
        ([*SUBMIT, "--deadline", "2020-01-01T00:00Z"], "spec.deadline_ms"),
        ([*SUBMIT, "--deadline", "1h", "--cron", "0 9 * * *"], "spec.deadline_ms"),
        ([*SUBMIT, "--queue-limit", "30"], "spec.queue_limit_ms"),
        ([*SUBMIT, "--queue-limit", "0s"], "spec.queue_limit_ms"),
        ([*SUBMIT, "--depends-on", "job-1"], "spec.depends_on.0"),
        ([*SUBMIT, "--label", "no-equals-sign"], "spec.labels"),
        ([*SUBMIT, "--workflow", ""], "workflow_id"),
        ([*SUBMIT, "--concurrency", "c:0"], "spec.job_keys.concurrency.limit"),
        ([*SUBMIT, "--concurrency", "c-{params.id}"], "spec.job_keys"),
        ([*SUBMIT, "--rate", "crm"], "spec.job_keys.rate"),
        ([*SUBMIT, "--rate", "crm=fast"], "spec.job_keys.rate.rate"),
        ([*SUBMIT, "--debounce", "c=soon"], "spec.job_keys.debounce.window_ms"),
        ([*SUBMIT, "--debounce-keep", "first"], "spec.job_keys.debounce"),
        ([*SUBMIT, "--debounce", "c=5s", "--debounce-keep", "middle"],
         "spec.job_keys.debounce.keep"),
        ([*SUBMIT, "--singleton", "s", "--singleton-mode", "queue"],
         "spec.job_keys.singleton.mode"),
        ([*SUBMIT, "--singleton", "s", "--cron", "0 9 * * *"], "spec.job_keys.singleton_key"),
        *[([*SUBMIT, option, value], "spec.cron." + name)  # each policy needs --cron
          for option, name, value, _ in POLICY_OPTIONS],
        *[([*SUBMIT, "--cron", "0 9 * * *", option, value], "spec.cron." + name)
          for option, name, _, refused in POLICY_OPTIONS for value in refused],
        ([*SUBMIT, "--cron", "0 9 * * *", "--start-at", "2027-01-02T00:00Z",
          "--end-at", "2027-01-01T00:00Z"], "spec.cron.end_at_ms"),
        (["reschedule", JOB_ID, "--misfire", "run-all"], "cron.misfire"),
        (["reschedule", JOB_ID, "--cron", "0 9 * * *", "--misfire", "retry"], "cron.misfire"),
        (["reschedule", JOB_ID, "--cron", "0 9 * * *", "--jitter", "9"], "cron.jitter_ms"),
        (["submit", "--type", "Report", "--owner", "acme"], "spec.job_type"),
        (["submit", "--type", "report.generate", "--owner", " "], "spec.owner"),
        (["cancel", "not-an-id"], "job_id"),
        (["pause", JOB_ID, "--workflow", ""], "workflow_id"),
        (["reschedule", JOB_ID], "cron"),
        (["reschedule", JOB_ID, "--cron", "0 9 * * *", "--tz", "Mars/Base"], "cron.timezone"),
        (["reschedule", JOB_ID, "--params", "3"], "params"),
        (["reschedule", JOB_ID, "--at", "2026-12-01T09:00"], "run_at_ms"),
        (["reschedule", JOB_ID, "--at", "2020-12-01T09:00Z"], "run_at_ms"),
        (["reschedule", JOB_ID, "--at", "2030-12-01T09:00Z", "--cron", "0 9 * * *"], "run_at_ms"),
    ],
)
def test_a_bad_command_exits_2_naming_the_field(
    args: list[str], field: str, unreachable_env: dict[str, str]
) -> None:
    result = CliRunner().invoke(make_app(), args, env=unreachable_env)
    assert result.exit_code == EXIT_INVALID, result.output
    assert result.stderr.startswith(f"error: {field}: "), result.stderr
    assert result.stdout == ""


def test_bad_time_zone_message(unreachable_env: dict[str, str]) -> None:
    args = [*SUBMIT, "--cron", "0 9 * * MON-FRI", "--tz", "Mars/Base"]
    result = CliRunner().invoke(make_app(), args, env=unreachable_env)
    assert result.stderr == "error: spec.cron.timezone: unknown time zone: 'Mars/Base'\n"


def test_submit_prints_only_the_job_id_and_the_job_lands(
    topics: Topics, unique_name: str, tmp_path: Path
) -> None:
    params = tmp_path / "params.json"
    params.write_text('{"report": "sales", "month": "2026-11"}')
    at = (datetime.now(UTC) + timedelta(days=1)).replace(second=0, microsecond=0)
    args = [
        *SUBMIT,
        "--at", at.strftime("%Y-%m-%dT%H:%MZ"), "--params", f"@{params}", "--priority", "HIGH",
        "--timeout", "90s", "--max-attempts", "5", "--label", "team=finance",
        "--concurrency", "report-{params.report}:2", "--rate", "crm=100/min",
    ]  # fmt: skip
    result = CliRunner().invoke(make_app(), args, env=broker_env(topics))
    assert result.exit_code == 0, result.output
    job_id = result.stdout.strip()
    assert result.stdout == job_id + "\n" and is_job_id(job_id)

    [record] = read_intake(topics, unique_name, 1)
    assert record.key == job_id.encode()
    spec = record.event.data["spec"]
    assert spec["params"] == '{"report":"sales","month":"2026-11"}'
    assert spec["run_at_ms"] == ms_of(at)
    assert (spec["priority"], spec["timeout_ms"]) == ("HIGH", 90_000)
    assert spec["retry"]["max_attempts"] == 5
    assert spec["labels"] == {"team": "finance"}
    keys = spec["job_keys"]
    assert (keys["concurrency_key"], keys["concurrency_limit"]) == ("report-sales", 2)
    assert (keys["rate_key"], keys["rate"]) == ("crm", "100/min")


def test_recurring_submit_with_a_key_then_commands(topics: Topics, unique_name: str) -> None:
    env = broker_env(topics)
    runner = CliRunner()
    args = [
        *SUBMIT,
        "--cron", "0 9 * * MON-FRI", "--tz", "Europe/Paris",
        "--idempotency-key", "daily-sales", "--workflow", "wf-cli",
    ]  # fmt: skip
    submitted = runner.invoke(make_app(), args, env=env)
    assert submitted.exit_code == 0, submitted.output
    job_id = submitted.stdout.strip()
    assert job_id == idempotent_job_id("acme", "daily-sales")

    for command in (
        ["pause", job_id, "--workflow", "wf-cli"],
        ["resume", job_id, "--workflow", "wf-cli"],
        ["reschedule", job_id, "--cron", "0 8 * * *", "--tz", "UTC", "--workflow", "wf-cli"],
        ["cancel", job_id, "--workflow", "wf-cli", "--reason", "replaced"],
    ):
        result = runner.invoke(make_app(), command, env=env)
        assert result.exit_code == 0, result.output
        assert result.stdout == ""

    received = read_intake(topics, unique_name, 5)
    assert {r.key for r in received} == {b"wf-cli"}
    assert [r.event.name for r in received] == [
        "JobSubmitted",
        "ScheduleChanged",
        "ScheduleChanged",
        "ScheduleChanged",
        "JobCancelled",
    ]
    cron = received[0].event.data["spec"]["cron"]
    assert (cron["expression"], cron["timezone"]) == ("0 9 * * MON-FRI", "Europe/Paris")
    assert received[3].event.data["cron"]["expression"] == "0 8 * * *"
    assert received[4].event.data["reason"] == "replaced"
    assert received[4].event.data["requested_by"] == requester(None)


def test_a_cancel_names_who_asked() -> None:
    assert requester("ops-bot") == "ops-bot"
    who = requester(None)
    assert who.startswith("cli:") and "@" in who


def test_reschedule_at_moves_a_one_off_job(topics: Topics, unique_name: str) -> None:
    env = broker_env(topics)
    runner = CliRunner()
    at = (datetime.now(UTC) + timedelta(days=1)).replace(second=0, microsecond=0)
    later = at + timedelta(hours=2)
    submitted = runner.invoke(make_app(), [*SUBMIT, "--at", at.isoformat()], env=env)
    assert submitted.exit_code == 0, submitted.output
    job_id = submitted.stdout.strip()
    moved = runner.invoke(make_app(), ["reschedule", job_id, "--at", later.isoformat()], env=env)
    assert (moved.exit_code, moved.stdout) == (0, ""), moved.output

    first, update = read_intake(topics, unique_name, 2)
    assert (update.key, update.event.name, update.event.data["action"]) == (
        job_id.encode(), "ScheduleChanged", "UPDATE")  # fmt: skip
    assert update.event.data["run_at_ms"] == ms_of(later)
    assert first.event.data["spec"]["run_at_ms"] == ms_of(at)


class RecordingClient:
    """Stands in for JobClient: the submit command's request, not the broker, is tested."""

    sent: ClassVar[list[Any]] = []

    def __init__(self, settings: object) -> None:
        pass

    def __enter__(self) -> RecordingClient:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def submit(self, request: JobRequest) -> str:
        self.sent.append(request.to_event(now_ms()).data)
        return "01JD3W6Q8Z5X7M2K4N9P0R1S2T"

    def send_command(self, event: Event) -> None:
        self.sent.append(event.data)


def test_each_schedule_policy_reaches_the_cron_schedule_record(
    monkeypatch: pytest.MonkeyPatch, unreachable_env: dict[str, str]
) -> None:
    monkeypatch.setattr(cli_module, "JobClient", RecordingClient)
    RecordingClient.sent = []
    args = [*SUBMIT, "--cron", "30 2 * * *", "--tz", "Europe/Paris",
            "--skipped-hour", "skip", "--repeated-hour", "BOTH", "--misfire", "run-all",
            "--catchup-window", "6h", "--overlap", "skip", "--jitter", "30s",
            "--max-runs", "100", "--start-at", "2026-12-01T00:00Z",
            "--end-at", "2027-12-01T01:00+01:00"]  # fmt: skip
    result = CliRunner().invoke(make_app(), args, env=unreachable_env)
    assert result.exit_code == 0, result.output
    (record,) = RecordingClient.sent
    assert records.plain(record.spec.cron) == {
        "expression": "30 2 * * *", "timezone": "Europe/Paris",
        "skipped_hour": "SKIP", "repeated_hour": "BOTH", "misfire": "RUN_ALL",
        "catchup_window_ms": 6 * 3_600_000, "overlap": "SKIP", "jitter_ms": 30_000,
        "max_runs": 100, "start_at_ms": 1_796_083_200_000, "end_at_ms": 1_827_619_200_000,
    }  # fmt: skip
    RecordingClient.sent = []
    plain = CliRunner().invoke(make_app(), [*SUBMIT, "--cron", "0 9 * * *"], env=unreachable_env)
    assert plain.exit_code == 0, plain.output
    (record,) = RecordingClient.sent
    assert records.plain(record.spec.cron) == CronSpec(expression="0 9 * * *").to_avro()


def test_a_reschedule_takes_the_policies_too(
    monkeypatch: pytest.MonkeyPatch, unreachable_env: dict[str, str]
) -> None:
    monkeypatch.setattr(cli_module, "JobClient", RecordingClient)
    RecordingClient.sent = []
    args = ["reschedule", JOB_ID, "--cron", "0 3 * * *", "--tz", "Europe/Paris",
            "--skipped-hour", "skip", "--misfire", "skip", "--overlap", "skip"]  # fmt: skip
    result = CliRunner().invoke(make_app(), args, env=unreachable_env)
    assert result.exit_code == 0, result.output
    (record,) = RecordingClient.sent
    expected = CronSpec(expression="0 3 * * *", timezone="Europe/Paris", skipped_hour="SKIP",
                        misfire="SKIP", overlap="SKIP")  # fmt: skip
    assert records.plain(record.cron) == expected.to_avro()


def test_a_deadline_is_a_duration_from_now_or_an_instant() -> None:
    assert cli_module.deadline_of("30m") == timedelta(minutes=30)
    assert cli_module.deadline_of("2.5s") == timedelta(milliseconds=2500)
    assert cli_module.deadline_of("2026-12-01T09:00Z") == "2026-12-01T09:00Z", "JobRequest's"
    request = JobRequest(job_type="a.b", owner="o", deadline=cli_module.deadline_of("PT1M"))
    assert request.deadline == timedelta(minutes=1)
