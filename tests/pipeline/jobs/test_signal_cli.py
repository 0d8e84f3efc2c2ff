"""``jobstream signal``: a bad signal exits 2 naming the field and sends nothing; a good one
lands on jobs.intake as the WorkflowSignalled any client would write, keyed by the workflow."""

from __future__ import annotations

import orjson
import pytest
import typer
from typer.testing import CliRunner

from jobstream._ops.kafka.ports import free_base_port
from jobstream._pipeline.jobs.cli import EXIT_INVALID
from jobstream._pipeline.jobs.signal_cli import signal
from jobstream._pipeline.topics import Topics
from tests.pipeline.jobs.intake import read_intake
from tests.support.cli import broker_env


def make_app() -> typer.Typer:
    app = typer.Typer()
    app.command("signal")(signal)
    app.command("unused")(lambda: None)  # two commands: typer then names the one invoked
    return app


@pytest.mark.parametrize(("args", "field"), [
    (["wf-1", "approved", "--owner", "acme", "--payload", "{not json"], "payload"),
    (["wf 1", "approved", "--owner", "acme"], "workflow_id"),
    (["wf-1", " ", "--owner", "acme"], "name"),
    (["wf-1", "approved", "--owner", ""], "owner"),
])  # fmt: skip
def test_a_bad_signal_exits_2_naming_the_field(args: list[str], field: str) -> None:
    env = {"JOBSTREAM_BOOTSTRAP_SERVERS": f"127.0.0.1:{free_base_port(1)}"}
    result = CliRunner().invoke(make_app(), ["signal", *args], env=env)
    assert result.exit_code == EXIT_INVALID, result.output
    assert result.stderr.startswith(f"error: {field}: "), result.stderr


def test_a_signal_lands_on_the_intake_keyed_by_its_workflow(
    topics: Topics, unique_name: str
) -> None:
    args = ["signal", "payroll-2026-11", "approved", "--owner", "acme",
            "--payload", '{"by": "ana"}', "--reason", "numbers checked", "--by", "ana"]  # fmt: skip
    result = CliRunner().invoke(make_app(), args, env=broker_env(topics))
    assert result.exit_code == 0, result.output
    [record] = read_intake(topics, unique_name, 1)
    assert record.key == b"payroll-2026-11"
    assert record.event.name == "WorkflowSignalled"
    data = record.event.data
    assert (data["owner"], data["name"], data["reject"], data["step"]) == (
        "acme", "approved", False, None)
    assert orjson.loads(data["payload"]) == {"by": "ana"}
    assert (data["reason"], data["requested_by"]) == ("numbers checked", "ana")
