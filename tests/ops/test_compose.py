"""docker-compose.yml names every service the README lists, and each runs a real command."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def compose_services() -> dict[str, dict]:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]


def readme_services() -> set[str]:
    """First-column names of the table under the README's 'Services' heading."""
    text = (ROOT / "README.md").read_text()
    section = text.split("### Services in docker-compose.yml", 1)[1].split("\n#", 1)[0]
    return set(re.findall(r"^\|\s*`([\w-]+)`\s*\|", section, flags=re.MULTILINE))


def test_compose_and_readme_name_the_same_services() -> None:
    listed = readme_services()
    assert listed, "README lists no services"
    assert listed == set(compose_services())


def test_long_running_services_have_healthchecks() -> None:
    for name, service in compose_services().items():
        if service.get("restart") != "no":
            assert "healthcheck" in service, f"{name} has no healthcheck"


def test_jobstream_services_run_real_commands() -> None:
    for name, service in compose_services().items():
        if service.get("image") != "jobstream:dev":
            continue
        command = service["command"]
        help_args = [part for part in command if not part.startswith("-")] + ["--help"]
        result = subprocess.run(
            [sys.executable, "-m", "ops", *help_args],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode == 0, f"{name}: jobstream {' '.join(command)}: {result.stderr}"
