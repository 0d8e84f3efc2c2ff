"""A secured broker of its own (TLS, SASL/SCRAM, ACLs) for the tests that need one, and
settings that log in to it as each role's principal.

Started once per session by the first test that asks for it (the ``secured_kafka``
fixture; a module runs the pipeline on it with :func:`secured_pipeline`, each process as
its role's principal), on free loopback ports; with ``CI=true`` a broker that cannot start
fails the run, elsewhere those tests are skipped. Owners :data:`OWNERS` have their doors
(pipeline/tenancy.py) before the pipeline starts, so the timers read their topics at once.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from jobstream._ops.kafka.acls import principal
from jobstream._ops.kafka.cluster import LocalCluster
from jobstream._ops.kafka.owners import add_owner
from jobstream._ops.kafka.ports import free_base_port, free_ports
from jobstream._ops.kafka.principals import apply_acls, every_role, upsert_users
from jobstream._ops.kafka.secure import ADMIN_USER
from jobstream._ops.stack import Stack, components, running_stack
from jobstream._pipeline.config import Settings
from jobstream._pipeline.errors import JobstreamError
from jobstream._pipeline.kafka.admin import ensure_topics
from jobstream._pipeline.tenancy import owner_principal
from jobstream._pipeline.topics import Topics
from tests.support.stack import APP
from tests.support.tools import unavailable


@dataclass(frozen=True)
class SecureKafka:
    cluster: LocalCluster
    bootstrap: str
    prefix: str
    job_types: tuple[str, ...]

    def env(self, user: str) -> dict[str, str]:
        """The JOBSTREAM_* security settings of a process logging in as ``user``."""
        return self.cluster.security.settings_env(user)

    def settings(self, user: str, *, intake_owner: str | None = None) -> Settings:
        """Settings on this broker's topics, logging in as ``user`` (a fresh object: the
        librdkafka settings of a Settings are computed once)."""
        env = self.env(user)
        return Settings(
            bootstrap_servers=self.bootstrap, topic_prefix=self.prefix,
            timer_partitions=2, exec_partitions=2, events_partitions=2, status_partitions=2,
            dlq_partitions=1, job_types=self.job_types,
            security_protocol="SASL_SSL", sasl_mechanism=env["JOBSTREAM_SASL_MECHANISM"],
            sasl_username=user, sasl_password=env["JOBSTREAM_SASL_PASSWORD"],
            ssl_ca_location=env["JOBSTREAM_SSL_CA_LOCATION"], intake_owner=intake_owner,
        )  # fmt: skip

    def role(self, role: str, job_type: str | None = None) -> Settings:
        return self.settings(principal(role, job_type))

    def owner(self, owner: str, *, door: str | None = None) -> Settings:
        """Settings logging in as ``owner``'s principal, submitting through ``door``'s
        intake topic (by default its own)."""
        return self.settings(owner_principal(owner), intake_owner=door or owner)


PREFIX = "secure."
JOB_TYPES = ("data.process", "image.render")
OWNERS = ("tenant-a", "tenant-b")
ROLE_OF = {"timers": "timers", "status-processor": "status", "retry-router": "retry"}


@pytest.fixture(scope="session")
def secured_kafka(tmp_path_factory: pytest.TempPathFactory,
                  child_processes: None) -> Iterator[SecureKafka]:  # fmt: skip
    with secure_kafka(tmp_path_factory.mktemp("secure-kafka"), PREFIX, JOB_TYPES) as running:
        yield running


@contextmanager
def secured_pipeline(kafka: SecureKafka, home: Path,
                     only: tuple[str, ...] | None = None) -> Iterator[Stack]:  # fmt: skip
    """Timers, status processor, retry router and a data.process worker (or those whose
    names start with one of ``only``), each logging in as its role's principal; the stack's
    own settings carry no user at all. A module's: stopped with it, so no process idles
    through the rest of the session."""
    parts = []
    for part in components(free_ports(4), app=APP, job_types=("data.process",),
                           lease_s=5, heartbeat_s=0.5):  # fmt: skip
        if only is not None and not part.name.startswith(only):
            continue
        role = next((r for name, r in ROLE_OF.items() if part.name.startswith(name)), "worker")
        user = principal(role, "data.process" if role == "worker" else None)
        parts.append(dataclasses.replace(part, env=(*part.env, *kafka.env(user).items())))
    with running_stack(kafka.role("client"), home, parts) as running:
        yield running


@contextmanager
def secure_kafka(home: Path, prefix: str, job_types: tuple[str, ...]) -> Iterator[SecureKafka]:
    """A secured single-node cluster in ``home`` with jobstream's topics under ``prefix``,
    every role's user and ACLs, and :data:`OWNERS`' doors; stopped at the end."""
    cluster = LocalCluster(home)
    try:
        layout = cluster.up(nodes=1, port=free_base_port(1), heap_mb=384, secure=True)
    except JobstreamError as exc:
        cluster.down()
        unavailable(f"the secured Kafka broker could not start: {exc}")
    try:
        kafka = SecureKafka(cluster, layout.bootstrap, prefix, job_types)
        admin = kafka.settings(ADMIN_USER)
        ensure_topics(admin.kafka_config, Topics(admin).specs())
        roles = every_role(job_types)
        upsert_users(admin.kafka_config,
                     {r.user: cluster.security.password(r.user) for r in roles})  # fmt: skip
        apply_acls(admin.kafka_config, Topics(admin), roles)
        for owner in OWNERS:
            add_owner(admin.kafka_config, Topics(admin), owner,
                      password=cluster.security.password(owner_principal(owner)))  # fmt: skip
        yield kafka
    finally:
        cluster.down()
