"""The Grafana dashboard, the Prometheus alert rules and configuration in ops/monitoring/:
they parse (promtool checks the rules and the configuration), every series they query is
one the processes export (pipeline/metrics.py), and what docker-compose.yml mounts for
Prometheus and Grafana points at its services."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client.metrics import MetricWrapperBase

from jobstream._pipeline import metrics
from tests.support.compose import METRICS_PORT, compose_services, jobstream_services, option_value
from tests.support.tools import debian_tool

MONITORING = Path(__file__).parents[2] / "ops" / "monitoring"
SERIES = re.compile(r"\bjobstream_[a-z_]+")
SUFFIXES = {"counter": ("_total",), "gauge": ("",), "histogram": ("_bucket", "_count", "_sum")}


def exported() -> set[str]:
    """Every series name the processes can expose."""
    names = set()
    for value in vars(metrics).values():
        if isinstance(value, MetricWrapperBase):
            for family in value.describe():
                names |= {family.name + suffix for suffix in SUFFIXES[family.type]}
    return names


def dashboard_exprs(dashboard: dict[str, Any]) -> Iterator[str]:
    for panel in dashboard["panels"]:
        for target in panel["targets"]:
            yield target["expr"]
    for variable in dashboard["templating"]["list"]:
        if variable.get("type") == "query":
            yield variable["query"]


def balanced(expr: str) -> bool:
    depth = 0
    for char in expr:
        depth += {"(": 1, ")": -1, "[": 1, "]": -1, "{": 1, "}": -1}.get(char, 0)
        if depth < 0:
            return False
    return depth == 0


def test_the_exported_names_are_what_docs_metrics_lists() -> None:
    documented = set(SERIES.findall((MONITORING.parents[1] / "docs" / "metrics.md").read_text()))
    bases = {re.sub(r"_(bucket|count|sum)$", "", name) for name in exported()}
    assert "jobstream_fired_total" in bases and "jobstream_fire_lateness_seconds" in bases
    assert bases <= documented, f"undocumented: {sorted(bases - documented)}"


def test_the_dashboard_queries_only_exported_series() -> None:
    dashboard = json.loads((MONITORING / "grafana-dashboard.json").read_text())
    exprs = list(dashboard_exprs(dashboard))
    assert len(exprs) >= 10
    used = {name for expr in exprs for name in SERIES.findall(expr)}
    assert used <= exported(), f"not exported: {sorted(used - exported())}"
    assert all(balanced(expr) for expr in exprs)
    ids = [panel["id"] for panel in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    # the promise is drawn on the fire lateness panel
    lateness = next(p for p in dashboard["panels"] if "jobstream_fire_lateness" in
                    p["targets"][0]["expr"])  # fmt: skip
    assert lateness["fieldConfig"]["defaults"]["thresholds"]["steps"][1]["value"] == 2


def test_the_alert_rules_cover_the_four_concerns_with_exported_series() -> None:
    rules = yaml.safe_load((MONITORING / "alerts.yml").read_text())
    alerts = {rule["alert"]: rule for group in rules["groups"] for rule in group["rules"]}
    for rule in alerts.values():
        assert set(rule) >= {"alert", "expr", "for", "labels", "annotations"}
        assert rule["labels"]["severity"] in ("page", "warn") and rule["annotations"]["summary"]
        assert balanced(rule["expr"])
        used = set(SERIES.findall(rule["expr"]))
        assert used and used <= exported(), f"{rule['alert']}: {sorted(used - exported())}"
    concerns = {
        "JobstreamFiringLate": "jobstream_fire_lateness_seconds_bucket",
        "JobstreamConsumerLagGrowing": "jobstream_consumer_lag",
        "JobstreamDeadLettersGrowing": "jobstream_dead_letters_total",
        "JobstreamNoWorkerHeartbeat": "jobstream_worker_heartbeat_seconds",
    }
    for name, series in concerns.items():
        assert series in alerts[name]["expr"], name
    assert "> 2" in alerts["JobstreamFiringLate"]["expr"]  # the 2 s promise


@pytest.fixture(scope="module")
def promtool(child_processes: None) -> str:
    return debian_tool("promtool", "prometheus")


@pytest.mark.parametrize("check", [("rules", "alerts.yml"), ("config", "prometheus.yml")])
def test_promtool_accepts_the_file(promtool: str, check: tuple[str, str]) -> None:
    """``check config`` also checks the rule files the configuration loads."""
    kind, name = check
    done = subprocess.run([promtool, "check", kind, name], cwd=MONITORING,
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS: 6 rules found" in done.stdout


def test_promtool_refuses_a_rule_that_does_not_parse(promtool: str, tmp_path: Path) -> None:
    rules = yaml.safe_load((MONITORING / "alerts.yml").read_text())
    rules["groups"][0]["rules"][0]["expr"] = "sum by (job_type (jobstream_fired_total)"
    (tmp_path / "alerts.yml").write_text(yaml.safe_dump(rules))
    done = subprocess.run([promtool, "check", "rules", str(tmp_path / "alerts.yml")],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode != 0


def test_prometheus_scrapes_every_process_that_serves_metrics() -> None:
    config = yaml.safe_load((MONITORING / "prometheus.yml").read_text())
    targets = {target for job in config["scrape_configs"] for group in job["static_configs"]
               for target in group["targets"]}  # fmt: skip
    served = {f"{name}:{option_value(service['command'], METRICS_PORT)}"
              for name, service in jobstream_services().items()
              if METRICS_PORT in service["command"]}  # fmt: skip
    assert targets == served
    assert config["rule_files"] == ["alerts.yml"]


def mounts(service: str) -> dict[str, str]:
    """The service's bind mounts: container path -> path in the repository."""
    return {target: source.removeprefix("./") for source, target, *_ in
            (volume.split(":") for volume in compose_services()[service]["volumes"])
            if source.startswith(".")}  # fmt: skip


def test_prometheus_reads_the_rules_beside_its_configuration() -> None:
    mounted = mounts("prometheus")
    assert mounted["/etc/prometheus/prometheus.yml"] == "ops/monitoring/prometheus.yml"
    assert mounted["/etc/prometheus/alerts.yml"] == "ops/monitoring/alerts.yml"


def test_grafana_provisions_the_compose_prometheus_and_the_dashboard() -> None:
    mounted = mounts("grafana")
    provisioned = {Path(target).parent.name: yaml.safe_load((MONITORING.parents[1] / source)
                                                            .read_text())
                   for target, source in mounted.items() if "/provisioning/" in target}  # fmt: skip
    (datasource,) = provisioned["datasources"]["datasources"]
    assert datasource["type"] == "prometheus" and datasource["isDefault"]
    prometheus = compose_services()["prometheus"]
    assert datasource["url"] == f"http://prometheus:{prometheus['ports'][0].split(':')[1]}"
    (provider,) = provisioned["dashboards"]["providers"]
    dashboard = next(t for t, s in mounted.items() if s == "ops/monitoring/grafana-dashboard.json")
    assert Path(dashboard).parent == Path(provider["options"]["path"])
