"""The pods' environment: the settings every process shares (a ConfigMap), and how each
process logs in to Kafka as its role's principal (a Secret the operator makes).

Every variable name is the one the settings class reads (:func:`variable`), so a renamed
setting fails the rendering instead of being ignored by a pod.
"""

from __future__ import annotations

from typing import Any

from pydantic_settings import BaseSettings

from jobstream._connectors.api.settings import ApiSettings
from jobstream._ops.deploy.profiles import Profile
from jobstream._pipeline.config import ENV_PREFIX, Settings, read_settings

USERS_SECRET = "jobstream-kafka-users"
"""Key: a principal (``jobstream-timers``, ``jobstream-worker-<type>``, ``admin``); value:
its SCRAM-SHA-512 password."""
CA_SECRET = "jobstream-kafka-ca"
"""Key ``ca.pem``: the CA the cluster's listener certificate is signed by."""
CA_DIR = "/etc/jobstream/kafka"
API_TOKENS_SECRET = "jobstream-api-tokens"
"""Keys ``tokens`` and ``admin-tokens``: the hashes docs/api.md describes."""
SETTINGS_CONFIGMAP = "jobstream-settings"
SCRAM = "SCRAM-SHA-512"


def variable(field: str, kind: type[BaseSettings] = Settings) -> str:
    """The environment variable of setting ``field`` of ``kind``."""
    if field not in kind.model_fields:
        raise KeyError(f"{kind.__name__} has no setting {field!r}")
    return f"{ENV_PREFIX}{field.upper()}"


def shared_values(profile: Profile, job_types: tuple[str, ...]) -> dict[str, Any]:
    """The settings every jobstream container reads from the ConfigMap, by field name."""
    values: dict[str, Any] = {
        "bootstrap_servers": profile.bootstrap,
        "replication_factor": profile.replication_factor,
        "min_insync_replicas": profile.min_insync_replicas,
        "timer_partitions": profile.partitions,
        "exec_partitions": profile.partitions,
        "events_partitions": profile.partitions,
        "job_types": ",".join(job_types),
        # /metrics and /healthz bind 127.0.0.1 by default: the kubelet and Prometheus
        # reach the pod's address.
        "metrics_host": "0.0.0.0",
    }
    if profile.secure:
        values.update(security_protocol="SASL_SSL", sasl_mechanism=SCRAM,
                      ssl_ca_location=f"{CA_DIR}/ca.pem")  # fmt: skip
    return {k: v for k, v in values.items() if v is not None}


def as_variables(values: dict[str, Any]) -> dict[str, str]:
    """Settings by field name as the environment gives them, checked by the settings class
    first (a bad value stops the rendering, not a pod)."""
    read_settings(Settings, **values)
    return {variable(field): str(value) for field, value in sorted(values.items())}


def login(principal: str) -> list[dict[str, Any]]:
    """The container variables that log in as ``principal`` (its password from the users'
    Secret)."""
    return [
        {"name": variable("sasl_username"), "value": principal},
        {"name": variable("sasl_password"),
         "valueFrom": {"secretKeyRef": {"name": USERS_SECRET, "key": principal}}},
    ]  # fmt: skip


def api_tokens(*, optional: bool) -> list[dict[str, Any]]:
    """The API's token hashes from their Secret; ``optional``: a pod starts without it,
    and then refuses every request (as docker-compose.yml's API with the variables unset)."""
    keys = {"api_tokens": "tokens", "api_admin_tokens": "admin-tokens"}
    return [{"name": variable(field, ApiSettings),
             "valueFrom": {"secretKeyRef": {"name": API_TOKENS_SECRET, "key": key,
                                            "optional": optional}}}
            for field, key in keys.items()]  # fmt: skip
