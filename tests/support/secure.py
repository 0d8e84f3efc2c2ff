"""A secured broker of its own (TLS, SASL/SCRAM, ACLs) for the tests that need one, and
settings that log in to it as each role's principal.

Started only by the modules that ask for it (module scope), on free loopback ports; with
``CI=true`` a broker that cannot start fails the run, elsewhere those tests are skipped.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from jobstream._ops.kafka.acls import principal
from jobstream._ops.kafka.cluster import LocalCluster
from jobstream._ops.kafka.ports import free_base_port
from jobstream._ops.kafka.principals import apply_acls, every_role, upsert_users
from jobstream._ops.kafka.secure import ADMIN_USER
from jobstream._pipeline.config import Settings
from jobstream._pipeline.errors import JobstreamError
from jobstream._pipeline.kafka.admin import ensure_topics
from jobstream._pipeline.topics import Topics
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

    def settings(self, user: str) -> Settings:
        """Settings on this broker's topics, logging in as ``user`` (a fresh object: the
        librdkafka settings of a Settings are computed once)."""
        env = self.env(user)
        return Settings(
            bootstrap_servers=self.bootstrap, topic_prefix=self.prefix,
            timer_partitions=2, exec_partitions=2, events_partitions=2, status_partitions=2,
            dlq_partitions=1, job_types=self.job_types,
            security_protocol="SASL_SSL", sasl_mechanism=env["JOBSTREAM_SASL_MECHANISM"],
            sasl_username=user, sasl_password=env["JOBSTREAM_SASL_PASSWORD"],
            ssl_ca_location=env["JOBSTREAM_SSL_CA_LOCATION"],
        )  # fmt: skip

    def role(self, role: str, job_type: str | None = None) -> Settings:
        return self.settings(principal(role, job_type))


@contextmanager
def secure_kafka(home: Path, prefix: str, job_types: tuple[str, ...]) -> Iterator[SecureKafka]:
    """A secured single-node cluster in ``home`` with jobstream's topics under ``prefix``,
    every role's user and ACLs; stopped at the end."""
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
        yield kafka
    finally:
        cluster.down()
