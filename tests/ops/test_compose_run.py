"""docker-compose.yml's jobstream services, each run by its own command line from the
installed wheel against a broker the wheel started: what ``docker compose up`` would run,
short of the images and containers (docs/deploy.md says what that leaves unproven)."""

from __future__ import annotations

import json
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from ops.kafka.ports import free_ports
from tests.support.compose import LOOPBACK, METRICS_PORT, ROOT, ComposeRun
from tests.support.scrape import scrape
from tests.support.tools import debian_tool
from tests.support.waiting import wait_for

pytestmark = pytest.mark.timeout(900)  # see tests/ops/test_wheel.py

MONITORING = ROOT / "ops" / "monitoring"


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
    page = httpx.get(f"{url}/", timeout=10)
    assert page.status_code == 200 and "<html" in page.text.lower()
    assert httpx.get(f"{url}/static/app.js", timeout=10).status_code == 200
    me = httpx.get(f"{url}/api/v1/me", timeout=10,
                   headers={"Authorization": f"Bearer {compose_run.api_token}"})  # fmt: skip
    assert me.status_code == 200, me.text
    assert httpx.get(f"{url}/api/v1/me", timeout=10).status_code == 401


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
    config["scrape_configs"][0]["static_configs"] = [{"targets": [
        f"{LOOPBACK}:{s.port(METRICS_PORT)}" for s in compose_run.services if not s.one_shot]}]
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
