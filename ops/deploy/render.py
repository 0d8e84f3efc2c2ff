"""The manifests of a profile: every process of the stack (ops/deploy/workloads.py), the
settings they share, the workers' autoscaling, and on dev a one-node broker.

The processes are those docker-compose.yml runs, one per role of ops/kafka/acls.py: the
job types are the demo app's, the principals come from ``principal``, the consumer
groups KEDA watches from ``worker_group``, the settings' variables from the settings
classes.
"""

from __future__ import annotations

from typing import Any

import yaml

from jobstream._ops.demo_jobs.app import JOB_TYPES
from jobstream._ops.deploy import autoscaling, environment, kafka_dev
from jobstream._ops.deploy.profiles import PROFILES, Profile
from jobstream._ops.deploy.workloads import (
    Process,
    instance_id_env,
    objects,
    state_dir_env,
)
from jobstream._ops.kafka.acls import principal
from jobstream._ops.stack import DEMO_APP, YIELDING
from jobstream._pipeline.config import Settings, read_settings
from jobstream._pipeline.version import VERSION

ADMIN = "admin"
"""The principal of the set-up Jobs: one allowed to create topics and grant ACLs (the
local secured broker's super user has this name; on another cluster, its operators')."""
API_PORT = 8080
VIEW_DIR = "/views"


def default_image() -> str:
    return f"jobstream:{VERSION}"


def _yielding() -> tuple[dict[str, str], ...]:
    return tuple({"name": name, "value": value} for name, value in YIELDING)


def processes(profile: Profile) -> list[Process]:
    """Every process of the stack, in the order they are wanted."""
    small, large, replicas = profile.small, profile.large, profile.replicas
    ordinal = (instance_id_env(),)
    stateful = (*ordinal, state_dir_env())
    found = [
        Process("topics", "Job", ("topics", "create"), ADMIN, small),
        Process("timers", "StatefulSet", ("timers",), principal("timers"), large, replicas,
                state=profile.state_storage, env=stateful),
        Process("status-processor", "StatefulSet", ("status-processor",), principal("status"),
                large, replicas, state=profile.state_storage, env=(*stateful, *_yielding())),
        Process("retry-router", "StatefulSet", ("retry-router",), principal("retry"), small,
                replicas, env=(*ordinal, *_yielding())),
        Process("trigger-processor", "StatefulSet", ("trigger-processor",), principal("triggers"),
                small, replicas, env=(*ordinal, *_yielding())),
        Process("api", "Deployment", ("api", "--host", "0.0.0.0", "--port", str(API_PORT),
                                      "--view-dir", VIEW_DIR),
                principal("api"), small, replicas,
                env=tuple(environment.api_tokens(optional=not profile.secure)),
                ports={"http": API_PORT}, volumes={VIEW_DIR: {"emptyDir": {}}}),
    ]  # fmt: skip
    if profile.secure:
        found.insert(1, Process("acls", "Job", ("kafka", "acls"), ADMIN, small))
    for job_type in JOB_TYPES:
        found.append(Process(worker_name(job_type), "Deployment", (
            "worker", "--app", DEMO_APP, "--type", job_type,
            "--concurrency", str(profile.worker_concurrency)), principal("worker", job_type),
            large))  # fmt: skip
    return found


def worker_name(job_type: str) -> str:
    return f"worker-{job_type.replace('.', '-')}"


def render(profile: Profile, *, image: str | None = None) -> list[dict[str, Any]]:
    """Every object of ``profile``, in the order ``kubectl apply`` should meet them."""
    values = environment.shared_values(profile, JOB_TYPES)
    data = environment.as_variables(values)
    settings = read_settings(Settings, **values)
    found: list[dict[str, Any]] = [{
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": environment.SETTINGS_CONFIGMAP}, "data": data}]  # fmt: skip
    if profile.dev_broker:
        found += kafka_dev.objects()
    for process in processes(profile):
        found += objects(process, profile, image or default_image())
    for job_type in JOB_TYPES:
        name = worker_name(job_type)
        found.append(autoscaling.scaled_object(name, job_type, profile, settings))
        if profile.secure:
            found.append(autoscaling.trigger_authentication(name, job_type))
    return found


def to_yaml(manifests: list[dict[str, Any]]) -> str:
    return yaml.safe_dump_all(manifests, sort_keys=False, default_flow_style=False)


def render_profile(name: str, *, image: str | None = None) -> list[dict[str, Any]]:
    """The manifests of the profile named ``name``; a clear error for an unknown one."""
    if name not in PROFILES:
        raise KeyError(f"unknown profile {name!r}; the profiles are {', '.join(PROFILES)}")
    return render(PROFILES[name], image=image)
