"""KEDA's ScaledObject for a job type's workers: scaled on their consumer group's lag.

The group is the one the workers join (``worker_group``), so the lag KEDA reads is the
records of the type's three priority tiers that no worker has taken yet. No topic is
named: KEDA then sums the lag of every topic the group has offsets on, the three tiers.
At least one worker always runs, so the group has committed offsets for KEDA to read.
On the secured cluster KEDA logs in as the type's worker principal, which may read the
group (ops/kafka/acls.py), through a TriggerAuthentication on the users' Secret.
"""

from __future__ import annotations

from typing import Any

from jobstream._ops.deploy import environment
from jobstream._ops.deploy.profiles import Profile
from jobstream._ops.kafka.acls import principal
from jobstream._pipeline.config import Settings
from jobstream._pipeline.worker.lane import worker_group

KEDA_API = "keda.sh/v1alpha1"


def scaled_object(deployment: str, job_type: str, profile: Profile,
                  settings: Settings) -> dict[str, Any]:  # fmt: skip
    metadata: dict[str, Any] = {
        "bootstrapServers": profile.bootstrap,
        "consumerGroup": worker_group(settings.topic_prefix, job_type),
        "lagThreshold": str(profile.lag_per_worker),
        "offsetResetPolicy": "earliest",
    }
    trigger: dict[str, Any] = {"type": "kafka", "metadata": metadata}
    if profile.secure:
        metadata.update(sasl="scram_sha512", tls="enable")
        trigger["authenticationRef"] = {"name": deployment}
    return {
        "apiVersion": KEDA_API, "kind": "ScaledObject",
        "metadata": {"name": deployment, "labels": {"app.kubernetes.io/name": deployment}},
        "spec": {
            "scaleTargetRef": {"name": deployment},
            "minReplicaCount": 1,
            # More consumers than partitions sit idle (KEDA caps there too).
            "maxReplicaCount": min(profile.max_workers, settings.exec_partitions),
            "pollingInterval": 15,
            # A worker pod drains for --drain-timeout: do not scale down on a dip.
            "cooldownPeriod": 300,
            "triggers": [trigger],
        },
    }  # fmt: skip


def trigger_authentication(deployment: str, job_type: str) -> dict[str, Any]:
    """How KEDA logs in to the secured cluster as the workers of ``job_type``."""
    user = principal("worker", job_type)
    users, ca = environment.USERS_SECRET, environment.CA_SECRET
    return {
        "apiVersion": KEDA_API, "kind": "TriggerAuthentication",
        "metadata": {"name": deployment},
        "spec": {
            "secretTargetRef": [
                {"parameter": "password", "name": users, "key": user},
                {"parameter": "ca", "name": ca, "key": "ca.pem"},
            ],
            # The user name is no secret: the one the workers' container logs in with.
            "env": [{"parameter": "username", "name": environment.variable("sasl_username"),
                     "containerName": deployment}],
        },
    }  # fmt: skip
