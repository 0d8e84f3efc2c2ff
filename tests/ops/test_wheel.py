"""The wheel runs anywhere: installed in a clean virtualenv and run from outside the
checkout, it holds every file its commands read, starts a broker, creates the topics, runs
the processes and takes a submitted job to SUCCEEDED.

The same wheel runs docker-compose.yml's jobstream services, each by its own command line,
against a broker the wheel started: what ``docker compose up`` would run, short of the
images and containers (docs/deploy.md says what that leaves unproven). One module, so that
the session's wheel, broker and services are made once under ``make test``'s xdist
processes (a module goes whole to one of them).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tomllib
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from jobstream._ops.kafka.ports import free_ports
from jobstream._ops.scrape import scrape
from jobstream._ops.stack import Stack, worker
from tests.support.compose import LOOPBACK, METRICS_PORT, ComposeRun
from tests.support.pods import jobstream_containers, localize_pods
from tests.support.tools import debian_tool
from tests.support.tutorial import run_tutorial
from tests.support.waiting import wait_for
from tests.support.wheel import ROOT, Installed

# The first test to ask for the session's wheel builds and installs it: minutes, not the
# default 300 s, on a loaded 2-core machine.
pytestmark = pytest.mark.timeout(900)

MONITORING = ROOT / "ops" / "monitoring"
JOB_TYPES = ("data.process", "image.render", "report.generate")
USER_PROJECT = ROOT / "tests" / "support" / "user_project"
"""A team's repository with packages of its own named ``pipeline``, ``ops`` and
``connectors``, and a worker module that imports them beside jobstream."""
USER_JOB_TYPE = "userproject.etl"


def test_the_wheel_holds_every_package_data_file_of_the_checkout(
    installed_wheel: Installed,
) -> None:
    """Each glob of [tool.setuptools.package-data] matches the same files, byte for byte,
    in the checkout (the schemas through their link) and in the installed package."""
    globs = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"]  # fmt: skip
    compared = 0
    for package, patterns in globs.items():
        for pattern in patterns:
            here = sorted((ROOT / package.replace(".", "/")).glob(pattern))  # through the links
            assert here, f"{package}: {pattern} matches nothing in the checkout"
            for path in here:
                relative = path.relative_to(ROOT)
                shipped = installed_wheel.site_packages / relative
                assert shipped.is_file(), f"{relative} is not in the wheel"
                assert shipped.read_bytes() == path.read_bytes(), relative
                compared += 1
    assert compared >= len(list((ROOT / "schemas").rglob("*.avsc")))


def test_commands_run_from_the_virtualenv_alone(installed_wheel: Installed) -> None:
    for command in (("--help",), ("topics", "--help")):
        done = installed_wheel.run(*command)
        assert done.returncode == 0, f"jobstream {' '.join(command)}: {done.stderr}"
    probe = "import jobstream._pipeline.serde.schemas as s; print(s.DEFAULT_SCHEMAS_DIR)"
    found = subprocess.run([str(installed_wheel.venv / "bin" / "python"), "-c", probe],
                           cwd=installed_wheel.home, env=installed_wheel.env(),
                           capture_output=True, text=True, timeout=60, check=True)  # fmt: skip
    assert found.stdout.startswith(str(installed_wheel.site_packages)), found.stdout


def test_the_wheel_installs_one_top_level_import_name(installed_wheel: Installed) -> None:
    """Every file pip installed from the wheel, as the distribution's RECORD lists it, is
    under ``jobstream/`` or its dist-info, or is the ``jobstream`` script."""
    probe = ("import importlib.metadata as m, json; "
             "print(json.dumps([f.parts for f in m.distribution('jobstream').files]))")
    listed = subprocess.run([str(installed_wheel.venv / "bin" / "python"), "-c", probe],
                            cwd=installed_wheel.home, env=installed_wheel.env(),
                            capture_output=True, text=True, timeout=60, check=True)  # fmt: skip
    files = [tuple(parts) for parts in json.loads(listed.stdout)]
    names = {parts[0] for parts in files if not parts[0].endswith(".dist-info")}
    scripts = {parts[-1] for parts in files if parts[0] == ".."}
    assert names - {".."} == {"jobstream"}, names
    assert scripts == {"jobstream"}, scripts
    assert ("jobstream", "py.typed") in files


def test_the_getting_started_tutorial_runs_from_the_wheel(
        installed_wheel: Installed, tmp_path: Path) -> None:  # fmt: skip
    """docs/getting-started.md, step by step, as a reader types it (tests/support/tutorial.py):
    its own broker, the pipeline's processes, a worker module of the reader's, a job that
    ends SUCCEEDED. The broker skips its warm-up (20 s of JIT compiling that the tutorial,
    which waits for its job without a bound, does not need)."""
    ran = run_tutorial(installed_wheel, tmp_path / "tutorial",
                       env={"JOBSTREAM_KAFKA_WARM_UP": "0s"})
    assert any('"state": "SUCCEEDED"' in step.output for step in ran)


@pytest.fixture(scope="session")
def testing_extra(installed_wheel: Installed) -> Installed:
    """The wheel's virtualenv with ``jobstream[testing]`` (pytest, testcontainers), as a
    team installs it to test its handlers."""
    (wheel,) = (installed_wheel.venv.parent / "dist").glob("jobstream-*.whl")
    subprocess.run([sys.executable, "-m", "pip", "--python",
                    str(installed_wheel.venv / "bin" / "python"), "install", "--quiet",
                    f"{wheel}[testing]"], check=True, capture_output=True, timeout=600)  # fmt: skip
    return installed_wheel


@pytest.fixture
def user_project(tmp_path: Path) -> Path:
    """A copy of the team's repository, outside the checkout."""
    project = tmp_path / "project"
    shutil.copytree(USER_PROJECT, project, ignore=shutil.ignore_patterns("__pycache__"))
    return project


def test_a_user_project_tests_its_handler_with_jobstream_testing_and_no_broker(
        testing_extra: Installed, user_project: Path) -> None:  # fmt: skip
    """The team's pytest run (jobstream's plugin loaded by its entry point) with the broker
    setting pointing where nothing listens: jobstream.testing needs none."""
    env = testing_extra.env({"JOBSTREAM_BOOTSTRAP_SERVERS": "127.0.0.1:9", "CI": ""})
    done = subprocess.run([str(testing_extra.venv / "bin" / "python"), "-m", "pytest", "-q",
                           "-p", "no:cacheprovider"], cwd=user_project, env=env,
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 passed" in done.stdout, done.stdout


def test_a_user_project_type_checks_against_the_installed_wheel(
        testing_extra: Installed, user_project: Path) -> None:  # fmt: skip
    """mypy --strict on the team's code finds jobstream in the wheel's virtualenv by its
    py.typed; a call that the public API's types refuse fails, so the types are the wheel's."""

    def mypy(*paths: str) -> subprocess.CompletedProcess[str]:
        python = str(testing_extra.venv / "bin" / "python")
        command = [sys.executable, "-m", "mypy", "--python-executable", python, "--strict",
                   "--cache-dir", "/dev/null", *paths]  # fmt: skip
        return subprocess.run(command, cwd=user_project, capture_output=True, text=True,
                              timeout=300)  # fmt: skip

    checked = mypy("myapp", "pipeline", "ops", "connectors", "tests", "submit.py")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    (user_project / "misuse.py").write_text("from jobstream import WorkerApp\n\n"
                                            "WorkerApp().handler(42)\n")  # fmt: skip
    refused = mypy("misuse.py")
    assert refused.returncode == 1, refused.stdout
    assert 'misuse.py:3: error: Argument 1 to "handler" of "WorkerApp"' in refused.stdout


def test_a_user_project_with_its_own_pipeline_package_is_served(
        compose_run: ComposeRun, user_project: Path, tmp_path: Path) -> None:  # fmt: skip
    """``jobstream worker --app myapp.jobs`` from the project's folder imports the team's
    ``pipeline``, ``ops`` and ``connectors`` and jobstream's public API, and runs the job
    that the team's asyncio service submits (``submit.py``, on the AsyncJobClient)."""
    installed = compose_run.installed
    env = {"JOBSTREAM_BOOTSTRAP_SERVERS": compose_run.bootstrap,
           "JOBSTREAM_METRICS_HOST": LOOPBACK}  # fmt: skip
    stack = Stack(tmp_path / "stack", installed.env(env), program=(installed.jobstream,),
                  cwd=user_project)  # fmt: skip
    try:
        stack.start([worker(USER_JOB_TYPE, "user-0", free_ports(1), app="myapp.jobs")],
                    timeout_s=120)  # fmt: skip
        submitted = subprocess.run([str(installed.venv / "bin" / "python"), "submit.py"],
                                   cwd=user_project, env=installed.env(env), text=True,
                                   capture_output=True, timeout=120)  # fmt: skip
        assert submitted.returncode == 0, submitted.stderr
        job_id = submitted.stdout.strip()

        def succeeded() -> dict[str, Any] | None:
            shown = installed.run("status", job_id, "--timeout", "5s", env=env)
            doc = json.loads(shown.stdout) if shown.returncode == 0 else {}
            return doc if doc.get("state") == "SUCCEEDED" else None

        doc = wait_for(succeeded, timeout_s=120, interval_s=1, what=f"{job_id} SUCCEEDED")
        assert json.loads(doc["result"]) == {"rows": [2, 4, 6], "source": "warehouse",
                                             "owner": "data-team"}  # fmt: skip
    finally:
        stack.stop()


def test_jobs_of_each_demo_type_run_to_succeeded(compose_run: ComposeRun) -> None:
    """``jobstream submit`` then ``jobstream status``, from the wheel, on its own broker."""
    installed = compose_run.installed
    env = {"JOBSTREAM_BOOTSTRAP_SERVERS": compose_run.bootstrap}
    ids = {}
    for job_type in JOB_TYPES:
        submitted = installed.run("submit", "--type", job_type, "--owner", "wheel", env=env)
        assert submitted.returncode == 0, submitted.stderr
        ids[job_type] = submitted.stdout.strip()

    def state(job_id: str) -> str:
        shown = installed.run("status", job_id, "--timeout", "5s", env=env)
        return str(json.loads(shown.stdout)["state"]) if shown.returncode == 0 else "none yet"

    def all_succeeded() -> dict[str, str]:
        states = {job_type: state(job_id) for job_type, job_id in ids.items()}
        return states if set(states.values()) == {"SUCCEEDED"} else {}

    wait_for(all_succeeded, timeout_s=120, interval_s=1, what=f"SUCCEEDED for {ids}")


def test_the_one_shot_services_exit_0(compose_run: ComposeRun) -> None:
    assert compose_run.exits == {s.name: 0 for s in compose_run.services if s.one_shot}
    assert "topics" in compose_run.exits


def test_every_long_running_service_is_up_and_exports_its_metrics(compose_run: ComposeRun) -> None:
    running = [s for s in compose_run.services if not s.one_shot]
    assert {s.name for s in running} == set(compose_run.stack.processes)
    assert not compose_run.stack.exited()
    for service in running:
        samples = scrape(service.port(METRICS_PORT))
        assert any(name.startswith("jobstream_") for name, _ in samples), service.name


def test_the_api_serves_the_dashboard_and_answers_a_configured_token(
        compose_run: ComposeRun) -> None:  # fmt: skip
    url = f"http://{LOOPBACK}:{compose_run.service('api').port('--port')}"
    # Healthy means its metrics port answers; the HTTP port opens once its views are built.
    wait_for(lambda: _answers(url), timeout_s=120, interval_s=0.5, what=f"the API on {url}")
    page = httpx.get(f"{url}/", timeout=10)
    assert page.status_code == 200 and "<html" in page.text.lower()
    assert httpx.get(f"{url}/static/app.js", timeout=10).status_code == 200
    me = httpx.get(f"{url}/api/v1/me", timeout=10,
                   headers={"Authorization": f"Bearer {compose_run.api_token}"})  # fmt: skip
    assert me.status_code == 200, me.text
    assert httpx.get(f"{url}/api/v1/me", timeout=10).status_code == 401


def _answers(url: str) -> bool:
    try:
        httpx.get(f"{url}/", timeout=5)
    except httpx.TransportError:
        return False
    return True


def _get_json(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(url, timeout=5) as reply:
        answer: dict[str, Any] = json.loads(reply.read())
    return answer


@pytest.fixture
def prometheus(compose_run: ComposeRun, tmp_path: Path) -> Iterator[str]:
    """Debian's Prometheus on ops/monitoring/prometheus.yml, its targets the services'
    local metrics ports, scraping and evaluating every second; yields its URL."""
    binary = debian_tool("prometheus", "prometheus")
    config = yaml.safe_load((MONITORING / "prometheus.yml").read_text())
    config["global"] = {"scrape_interval": "1s", "evaluation_interval": "1s"}
    config["rule_files"] = [str(MONITORING / name) for name in config["rule_files"]]
    config["scrape_configs"][0]["static_configs"] = [
        {
            "targets": [
                f"{LOOPBACK}:{s.port(METRICS_PORT)}" for s in compose_run.services if not s.one_shot
            ]
        }
    ]
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(config))
    address = f"{LOOPBACK}:{free_ports(1)}"
    with open(tmp_path / "prometheus.log", "wb") as log:
        process = subprocess.Popen([binary, f"--config.file={tmp_path / 'prometheus.yml'}",
                                    f"--storage.tsdb.path={tmp_path / 'data'}",
                                    f"--web.listen-address={address}"],
                                   stdout=log, stderr=subprocess.STDOUT)  # fmt: skip
    try:
        yield f"http://{address}"
    finally:
        process.terminate()
        process.wait(30)


def test_prometheus_scrapes_every_service_and_evaluates_the_alert_rules(
        compose_run: ComposeRun, prometheus: str) -> None:  # fmt: skip
    running = sum(not s.one_shot for s in compose_run.services)

    def targets_up() -> bool:
        try:
            targets = _get_json(f"{prometheus}/api/v1/targets")["data"]["activeTargets"]
        except OSError:
            return False  # not listening yet
        return len(targets) == running and all(t["health"] == "up" for t in targets)

    def rules_evaluated() -> list[dict[str, Any]]:
        groups = _get_json(f"{prometheus}/api/v1/rules")["data"]["groups"]
        rules = [rule for group in groups for rule in group["rules"]]
        return rules if rules and all(rule["health"] == "ok" for rule in rules) else []

    wait_for(targets_up, timeout_s=60, interval_s=0.5, what="every target up")
    rules = wait_for(rules_evaluated, timeout_s=30, interval_s=0.5, what="rules evaluated")
    alerts = yaml.safe_load((MONITORING / "alerts.yml").read_text())
    assert {r["name"] for r in rules} == {rule["alert"] for group in alerts["groups"]
                                          for rule in group["rules"]}  # fmt: skip


def test_each_container_of_the_dev_manifests_runs_to_healthy(
        installed_wheel: Installed, wheel_broker: str,
        tmp_path_factory: pytest.TempPathFactory) -> None:  # fmt: skip
    """``jobstream deploy render --profile dev`` from the wheel, then each jobstream
    container's arguments and environment (tests/support/pods.py) run by the wheel's
    ``jobstream``: the Job exits 0, and the others answer /healthz, the processors with
    their instance id and state folder from the pod's ordinal and volume as rendered. A topic
    prefix of its own keeps them apart from the compose services on the same broker."""
    image = "jobstream:k8s-test"
    rendered = installed_wheel.run("deploy", "render", "--profile", "dev", "--image", image)
    assert rendered.returncode == 0, rendered.stderr
    manifests = list(yaml.safe_load_all(rendered.stdout))
    work = tmp_path_factory.mktemp("pods")
    given = {"JOBSTREAM_BOOTSTRAP_SERVERS": wheel_broker, "JOBSTREAM_METRICS_HOST": LOOPBACK,
             "JOBSTREAM_API_TOKENS": "{}", "JOBSTREAM_API_ADMIN_TOKENS": "{}"}  # fmt: skip
    services = localize_pods(manifests, image, work, given,
                             added={"JOBSTREAM_TOPIC_PREFIX": "k8s."})  # fmt: skip
    assert {s.name for s in services} == set(jobstream_containers(manifests, image))
    for job in (s for s in services if s.one_shot):
        done = installed_wheel.run(*job.args, env=dict(job.env), timeout_s=120)
        assert done.returncode == 0, f"{job.name}: {done.stderr}"
    stack = Stack(work, installed_wheel.env(), program=(installed_wheel.jobstream,),
                  cwd=installed_wheel.home)  # fmt: skip
    running = [s for s in services if not s.one_shot]
    try:
        stack.start([s.component() for s in running], timeout_s=240)
        for service in running:
            with urllib.request.urlopen(
                    f"http://{LOOPBACK}:{service.port(METRICS_PORT)}/healthz", timeout=5) as r:
                assert r.status == 200, service.name
        assert {"timers", "status-processor", "api"} <= {s.name for s in running}
        assert any((work / "timers" / "state").iterdir()), "the timers kept no state"
    finally:
        stack.stop()
