"""The Kubernetes manifests (ops/deploy): every object of both profiles is valid for the
API server with no network, a broken one is refused, and the names in them are the ones
the code uses. tests/ops/test_wheel.py runs the dev profile's containers."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from jobstream._ops.demo_jobs.app import JOB_TYPES
from jobstream._ops.deploy.environment import USERS_SECRET, variable
from jobstream._ops.deploy.profiles import PROFILES
from jobstream._ops.deploy.render import render_profile, worker_name
from jobstream._ops.kafka.acls import principal
from jobstream._pipeline.cli_options import InstanceIdOption, StateDirOption
from jobstream._pipeline.worker.lane import worker_group
from tests.support.kubernetes import problems


def by_kind(manifests: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {m["metadata"]["name"]: m for m in manifests if m["kind"] == kind}


def container_of(workload: dict[str, Any]) -> dict[str, Any]:
    (container,) = workload["spec"]["template"]["spec"]["containers"]
    return container


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_every_manifest_is_valid_for_the_api_server(profile: str) -> None:
    manifests = render_profile(profile)
    found = [problem for manifest in manifests for problem in problems(manifest)]
    assert not found, "\n".join(found)
    kinds = {m["kind"] for m in manifests}
    assert {"StatefulSet", "Deployment", "Job", "PodDisruptionBudget", "ScaledObject"} <= kinds


@pytest.mark.parametrize(("kind", "path", "value"), [
    ("Deployment", ("spec", "replicas"), "two"),  # a wrong type
    ("StatefulSet", ("spec", "template", "spec", "restartPolicyy"), "Always"),  # a typo
    ("ScaledObject", ("spec", "maxReplicaCount"), "many"),
    ("ScaledObject", ("spec", "triggers", 0, "metadta"), {}),
])  # fmt: skip
def test_the_validator_refuses_a_broken_manifest(kind: str, path: tuple[Any, ...],
                                                 value: Any) -> None:  # fmt: skip
    manifest = copy.deepcopy(next(m for m in render_profile("dev") if m["kind"] == kind))
    *parents, last = path
    node = manifest
    for step in parents:
        node = node[step]
    node[last] = value
    found = problems(manifest)
    assert found, f"{kind} with {path} = {value!r} was accepted"
    assert str(path[-1]) in "".join(found) or str(value) in "".join(found), found


def test_processors_take_their_instance_id_from_the_pod_ordinal() -> None:
    manifests = render_profile("dev")
    stateful = by_kind(manifests, "StatefulSet")
    for name in ("timers", "status-processor", "retry-router", "trigger-processor"):
        env = {e["name"]: e for e in container_of(stateful[name])["env"]}
        field = env[InstanceIdOption.envvar]["valueFrom"]["fieldRef"]["fieldPath"]
        assert field == "metadata.labels['apps.kubernetes.io/pod-index']", name
    for name in ("timers", "status-processor"):
        claims = stateful[name]["spec"]["volumeClaimTemplates"]
        assert [c["metadata"]["name"] for c in claims] == ["state"]
        mounts = {m["name"]: m["mountPath"] for m in container_of(stateful[name])["volumeMounts"]}
        env = {e["name"]: e.get("value") for e in container_of(stateful[name])["env"]}
        assert mounts["state"] == env[StateDirOption.envvar]


def test_each_demo_type_has_a_worker_scaled_on_its_group_lag() -> None:
    manifests = render_profile("production")
    scaled = by_kind(manifests, "ScaledObject")
    deployments = by_kind(manifests, "Deployment")
    assert set(scaled) == {worker_name(t) for t in JOB_TYPES}
    for job_type in JOB_TYPES:
        name = worker_name(job_type)
        assert scaled[name]["spec"]["scaleTargetRef"]["name"] == name
        assert name in deployments
        (trigger,) = scaled[name]["spec"]["triggers"]
        assert trigger["metadata"]["consumerGroup"] == worker_group("", job_type)
        assert trigger["authenticationRef"]["name"] in by_kind(manifests, "TriggerAuthentication")
        assert container_of(deployments[name])["args"][:5] == [
            "worker", "--app", "jobstream._ops.demo_jobs.app", "--type", job_type]


def test_production_logs_in_each_process_as_its_role() -> None:
    manifests = render_profile("production")
    settings = by_kind(manifests, "ConfigMap")["jobstream-settings"]["data"]
    assert settings[variable("replication_factor")] == "3"
    assert settings[variable("min_insync_replicas")] == "2"
    assert settings[variable("security_protocol")] == "SASL_SSL"
    expected = {"timers": principal("timers"), "status-processor": principal("status"),
                "retry-router": principal("retry"), "api": principal("api"),
                **{worker_name(t): principal("worker", t) for t in JOB_TYPES}}  # fmt: skip
    workloads = {**by_kind(manifests, "StatefulSet"), **by_kind(manifests, "Deployment")}
    for name, user in expected.items():
        env = {e["name"]: e for e in container_of(workloads[name])["env"]}
        assert env[variable("sasl_username")]["value"] == user, name
        assert env[variable("sasl_password")]["valueFrom"]["secretKeyRef"] == {
            "name": USERS_SECRET, "key": user}


def test_every_long_running_pod_is_probed_scraped_budgeted_and_sized() -> None:
    for profile in PROFILES:
        manifests = render_profile(profile)
        budgets = by_kind(manifests, "PodDisruptionBudget")
        for kind in ("StatefulSet", "Deployment"):
            for name, workload in by_kind(manifests, kind).items():
                if name == "kafka":
                    continue
                container = container_of(workload)
                assert container["livenessProbe"]["httpGet"]["path"] == "/healthz", name
                assert container["args"][-2:] == ["--metrics-port", "9400"], name
                annotations = workload["spec"]["template"]["metadata"]["annotations"]
                assert annotations["prometheus.io/port"] == "9400", name
                assert container["resources"]["requests"], name
                assert name in budgets, name


def test_a_setting_the_code_does_not_read_is_refused() -> None:
    with pytest.raises(KeyError, match="no setting 'replication'"):
        variable("replication")
