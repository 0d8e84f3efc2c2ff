"""The Grafana dashboard and the Prometheus alert rules in ops/monitoring/: they parse, and
every series they query is one the processes export (pipeline/metrics.py)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml
from prometheus_client.metrics import MetricWrapperBase

from pipeline import metrics

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
