"""The Kubernetes objects of one jobstream process: its pod, and the StatefulSet,
Deployment or Job that runs it, with its Service and PodDisruptionBudget.

A processor holds a transactional id and a static group membership named by its instance
id (pipeline/runtime/options.py), so it runs in a StatefulSet and takes its instance id
from its pod's ordinal: a restarted pod keeps its name, fences what its predecessor left
open and takes its partitions back at once. The timers and the status processor also keep
their RocksDB stores on a volume of their own (``volumeClaimTemplates``). Workers are
dynamic group members with ids of their own (hostname-pid), so they are Deployments that
KEDA can scale; so is the API.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from jobstream._ops.deploy import environment
from jobstream._ops.deploy.profiles import Profile, Resources
from jobstream._pipeline.cli_options import InstanceIdOption, StateDirOption

Kind = Literal["StatefulSet", "Deployment", "Job"]

METRICS_PORT = 9400
"""/metrics and /healthz of every process, as in docker-compose.yml."""
STATE_DIR = "/state"
POD_INDEX = "metadata.labels['apps.kubernetes.io/pod-index']"
"""The downward API's field of a StatefulSet pod's ordinal (Kubernetes 1.28+)."""
PART_OF = "jobstream"
UID = 10001


@dataclass(frozen=True)
class Process:
    """One jobstream process as the cluster runs it."""

    name: str
    kind: Kind
    args: tuple[str, ...]
    """What follows ``jobstream`` (the image's entry point)."""
    principal: str
    """Its Kafka principal on the secured cluster (ops/kafka/acls.py)."""
    resources: Resources
    replicas: int = 1
    state: str | None = None
    """Size of its RocksDB volume; None: it keeps no state."""
    env: tuple[dict[str, Any], ...] = ()
    ports: dict[str, int] = field(default_factory=dict)
    """Ports beyond the metrics port, by name."""
    volumes: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Extra volumes: mount path -> the volume's source (e.g. an emptyDir)."""

    @property
    def labels(self) -> dict[str, str]:
        return {"app.kubernetes.io/name": self.name, "app.kubernetes.io/part-of": PART_OF}


def _env_of(option: Any) -> str:
    return str(option.envvar)


def instance_id_env() -> dict[str, Any]:
    """The instance id, from the pod's ordinal, in the variable the option reads."""
    return {"name": _env_of(InstanceIdOption), "valueFrom": {"fieldRef": {"fieldPath": POD_INDEX}}}


def state_dir_env() -> dict[str, str]:
    return {"name": _env_of(StateDirOption), "value": STATE_DIR}


def _probe(path: str = "/healthz", **timing: int) -> dict[str, Any]:
    return {"httpGet": {"path": path, "port": "metrics"}, "periodSeconds": 10,
            "timeoutSeconds": 5, **timing}  # fmt: skip


def container(process: Process, profile: Profile, image: str) -> dict[str, Any]:
    env: list[dict[str, Any]] = list(process.env)
    mounts: list[dict[str, Any]] = [{"name": _volume_name(path), "mountPath": path}
                                    for path in process.volumes]  # fmt: skip
    mounts.append({"name": "tmp", "mountPath": "/tmp"})
    if process.state:
        mounts.append({"name": "state", "mountPath": STATE_DIR})
    if profile.secure:
        env += environment.login(process.principal)
        mounts.append({"name": "kafka-ca", "mountPath": environment.CA_DIR, "readOnly": True})
    spec: dict[str, Any] = {
        "name": process.name,
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "args": [*process.args, "--metrics-port", str(METRICS_PORT)]
        if process.kind != "Job" else list(process.args),
        "envFrom": [{"configMapRef": {"name": environment.SETTINGS_CONFIGMAP}}],
        "env": env,
        "resources": process.resources.spec(),
        "volumeMounts": mounts,
        "securityContext": {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                            "capabilities": {"drop": ["ALL"]}},
    }  # fmt: skip
    if process.kind != "Job":
        spec["ports"] = [{"name": "metrics", "containerPort": METRICS_PORT}] + [
            {"name": name, "containerPort": port} for name, port in process.ports.items()]
        # A processor restores its stores before it turns healthy: startup may be long,
        # a hang after it is not.
        spec["startupProbe"] = _probe(failureThreshold=60)
        spec["livenessProbe"] = _probe(failureThreshold=6)
        spec["readinessProbe"] = _probe(failureThreshold=2)
    return spec


def _volume_name(path: str) -> str:
    return path.strip("/").replace("/", "-")


def pod(process: Process, profile: Profile, image: str) -> dict[str, Any]:
    volumes: list[dict[str, Any]] = [{"name": "tmp", "emptyDir": {}}]
    volumes += [{"name": _volume_name(path), **source} for path, source in process.volumes.items()]
    if profile.secure:
        volumes.append({"name": "kafka-ca", "secret": {"secretName": environment.CA_SECRET}})
    annotations = {} if process.kind == "Job" else {
        "prometheus.io/scrape": "true", "prometheus.io/port": str(METRICS_PORT),
        "prometheus.io/path": "/metrics"}  # fmt: skip
    spec: dict[str, Any] = {
        "securityContext": {"runAsNonRoot": True, "runAsUser": UID, "runAsGroup": UID,
                            "fsGroup": UID},
        "containers": [container(process, profile, image)],
        "volumes": volumes,
        # A worker drains on SIGTERM (--drain-timeout 30s) and commits its outcomes.
        "terminationGracePeriodSeconds": 60,
    }  # fmt: skip
    if process.kind == "Job":
        spec["restartPolicy"] = "OnFailure"
    return {"metadata": {"labels": process.labels, "annotations": annotations}, "spec": spec}


def _meta(process: Process) -> dict[str, Any]:
    return {"name": process.name, "labels": process.labels}


def workload(process: Process, profile: Profile, image: str) -> dict[str, Any]:
    template = pod(process, profile, image)
    if process.kind == "Job":
        return {"apiVersion": "batch/v1", "kind": "Job", "metadata": _meta(process),
                "spec": {"backoffLimit": 10, "template": template}}  # fmt: skip
    spec: dict[str, Any] = {"replicas": process.replicas,
                            "selector": {"matchLabels": process.labels}, "template": template}
    if process.kind == "StatefulSet":
        spec.update(serviceName=process.name, podManagementPolicy="Parallel")
        if process.state:
            spec["volumeClaimTemplates"] = [{
                "metadata": {"name": "state"},
                "spec": {"accessModes": ["ReadWriteOnce"],
                         "resources": {"requests": {"storage": process.state}}}}]  # fmt: skip
    return {"apiVersion": "apps/v1", "kind": process.kind, "metadata": _meta(process),
            "spec": spec}  # fmt: skip


def service(process: Process) -> dict[str, Any]:
    """Headless for a StatefulSet (its pods' stable names); the API's is a ClusterIP."""
    ports = [{"name": "metrics", "port": METRICS_PORT, "targetPort": "metrics"}]
    ports += [{"name": name, "port": port, "targetPort": name}
              for name, port in process.ports.items()]  # fmt: skip
    spec: dict[str, Any] = {"selector": process.labels, "ports": ports}
    if process.kind == "StatefulSet":
        spec["clusterIP"] = "None"
    return {"apiVersion": "v1", "kind": "Service", "metadata": _meta(process), "spec": spec}


def disruption_budget(process: Process) -> dict[str, Any]:
    """One pod of a process away at a time: a drain moves a timer's partitions one
    instance at a time, and never takes a type's last workers at once."""
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": _meta(process),
            "spec": {"maxUnavailable": 1, "selector": {"matchLabels": process.labels}}}


def objects(process: Process, profile: Profile, image: str) -> list[dict[str, Any]]:
    """Everything the cluster needs to run ``process``."""
    found = [workload(process, profile, image)]
    if process.kind != "Job":
        found += [service(process), disruption_budget(process)]
    return found
