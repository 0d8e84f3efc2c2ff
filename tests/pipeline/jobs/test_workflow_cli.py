"""``jobstream workflow submit | cancel``: files of steps and edges, refusals before the broker."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from jobstream._ops.kafka.ports import free_base_port
from jobstream._pipeline.jobs.cli import EXIT_INVALID
from jobstream._pipeline.jobs.workflow_cli import workflow_app
from jobstream._pipeline.topics import Topics
from jobstream._pipeline.workflows import step_job_id
from tests.pipeline.jobs.intake import read_intake
from tests.support.cli import broker_env

DIAMOND = """\
owner: acme
workflow_id: sales-2026-11
steps:
  - {name: aggregate, type: data.process, params: {input: sales.csv}}
  - {name: chart, type: image.render, depends_on: [aggregate]}
  - {name: table, type: data.process}
  - {name: report, type: report.generate, on_parent_failure: run}
edges:
  - [aggregate, table]
  - [chart, report]
  - [table, report]
"""


def app() -> typer.Typer:
    root = typer.Typer()
    root.add_typer(workflow_app, name="workflow")
    return root


def run(tmp_path: Path, text: str, env: dict[str, str], *extra: str,
        name: str = "wf.yaml") -> tuple[int, str, str]:  # fmt: skip
    path = tmp_path / name
    path.write_text(text)
    result = CliRunner().invoke(app(), ["workflow", "submit", str(path), *extra], env=env)
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def unreachable() -> dict[str, str]:
    return {"JOBSTREAM_BOOTSTRAP_SERVERS": f"127.0.0.1:{free_base_port(1)}"}


@pytest.mark.parametrize(("text", "message"), [
    (DIAMOND + "  - [report, aggregate]\n", "error: steps: cycle: aggregate -> chart -> report "
                                            "-> aggregate"),
    (DIAMOND.replace("[chart, report]", "[chart, nope]"), "error: edges.1.1: unknown step 'nope'"),
    (DIAMOND.replace("depends_on: [aggregate]", "depends_on: [agregate]"),
     "error: steps.1.depends_on.0: unknown step 'agregate' (step 'chart' depends on it)"),
    (DIAMOND.replace("type: image.render", "type: Image"), "error: steps.1.spec.job_type: "),
    (DIAMOND.replace("run}", "retry}"), "error: steps.3.spec.on_parent_failure: "),
    ("steps: []\nowner: acme\n", "error: steps: a workflow needs at least one step"),
    ("owner: acme\nstep: []\n", "error: step: is not a workflow field"),
    ("[1, 2", "error: file: "),
    (DIAMOND + "schedule: {expression: '0 3 * * *', timezone: Mars/Olympus}\n",
     "error: schedule.timezone: "),
    (DIAMOND.replace("{name: table, type: data.process}",
                     "{name: table, type: data.process, cron: '* * * * *'}"),
     "error: steps.2.spec.cron: a workflow step runs once: a recurring workflow has a schedule"),
])  # fmt: skip
def test_a_bad_workflow_exits_2_naming_what_is_wrong(
    tmp_path: Path,
    unreachable: dict[str, str],
    text: str,
    message: str,
) -> None:
    code, stdout, stderr = run(tmp_path, text, unreachable)
    assert (code, stdout) == (EXIT_INVALID, "")
    assert stderr.startswith(message), stderr


def test_a_workflow_file_lands_as_one_record(
    tmp_path: Path,
    topics: Topics,
    unique_name: str,
) -> None:
    code, stdout, stderr = run(tmp_path, DIAMOND.replace("owner: acme\n", ""), broker_env(topics),
                               "--owner", "acme", name="wf.json.yaml")  # fmt: skip
    assert code == 0, stderr
    lines = stdout.splitlines()
    assert lines[0] == "sales-2026-11"
    assert lines[1:] == [f"{name}\t{step_job_id('acme', 'sales-2026-11', name)}"
                         for name in ("aggregate", "chart", "table", "report")]  # fmt: skip
    [record] = read_intake(topics, unique_name, 1)
    assert (record.key, record.event.name) == (b"sales-2026-11", "WorkflowSubmitted")
    steps = {step["name"]: step for step in record.event.data["steps"]}
    assert steps["report"]["depends_on"] == ["chart", "table"]
    assert steps["report"]["spec"]["on_parent_failure"] == "RUN"
    assert steps["aggregate"]["spec"]["params"] == '{"input":"sales.csv"}'


def test_a_recurring_workflow_from_the_shell_lands_with_its_schedule(
    tmp_path: Path,
    topics: Topics,
    unique_name: str,
) -> None:
    code, stdout, stderr = run(tmp_path, DIAMOND, broker_env(topics), "--cron", "30 2 * * *",
                               "--tz", "Europe/Paris")  # fmt: skip
    assert code == 0, stderr
    assert stdout.splitlines() == ["sales-2026-11"], "a template has no step ids of its own"
    [record] = read_intake(topics, unique_name, 1)
    schedule = record.event.data["schedule"]
    assert (schedule["expression"], schedule["timezone"]) == ("30 2 * * *", "Europe/Paris")
    assert (schedule["overlap"], schedule["misfire"]) == ("SKIP", "RUN_ONCE")
