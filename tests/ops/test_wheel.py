"""The wheel runs anywhere: installed in a clean virtualenv and run from outside the
checkout, it holds every file its commands read, starts a broker, creates the topics, runs
the processes and takes a submitted job to SUCCEEDED."""

from __future__ import annotations

import json
import subprocess
import tomllib

import pytest

from tests.support.compose import ComposeRun
from tests.support.waiting import wait_for
from tests.support.wheel import ROOT, Installed

# The first test to ask for the session's wheel builds and installs it: minutes, not the
# default 300 s, on a loaded 2-core machine.
pytestmark = pytest.mark.timeout(900)

JOB_TYPES = ("data.process", "image.render", "report.generate")


def test_the_wheel_holds_every_package_data_file_of_the_checkout(
        installed_wheel: Installed) -> None:
    """Each glob of [tool.setuptools.package-data] matches the same files, byte for byte,
    in the checkout (the schemas through their link) and in the installed package."""
    globs = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"]  # fmt: skip
    compared = 0
    for package, patterns in globs.items():
        for pattern in patterns:
            here = sorted((ROOT / package).glob(pattern))
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
    probe = "import pipeline.serde.schemas as s; print(s.DEFAULT_SCHEMAS_DIR)"
    found = subprocess.run([str(installed_wheel.venv / "bin" / "python"), "-c", probe],
                           cwd=installed_wheel.home, env=installed_wheel.env(),
                           capture_output=True, text=True, timeout=60, check=True)  # fmt: skip
    assert found.stdout.startswith(str(installed_wheel.site_packages)), found.stdout


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
