"""Give an owner its door: its intake topic, its principal, and the one ACL that lets that
principal write the topic (pipeline/tenancy.py, docs/adr/0010-owner-intake-topics.md).

Runs as a principal allowed to create topics and alter ACLs (a super user), through the
admin API, like ``jobstream kafka acls``. Idempotent: a topic that exists with the right
partitions is kept, an ACL that exists is created again as a no-op, a password is set
anew.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from confluent_kafka import KafkaException

from jobstream._ops.kafka.principals import Role, apply_acls, upsert_users
from jobstream._pipeline.errors import BrokerError
from jobstream._pipeline.kafka import clients
from jobstream._pipeline.kafka.admin import ensure_topics
from jobstream._pipeline.tenancy import owner_of_topic
from jobstream._pipeline.topics import Topics

log = logging.getLogger(__name__)


def add_owner(kafka_config: Mapping[str, str | int], topics: Topics, owner: str, *,
              password: str | None = None, timeout_s: float = 30.0) -> Role:  # fmt: skip
    """Make ``owner``'s intake topic (as many partitions as jobs.intake: the timers read
    partition p of both together), give its principal ``password`` when one is given, and
    grant it its ACL; the role provisioned."""
    role = Role.of_owner(owner)
    intake = _partitions(kafka_config, topics.intake, timeout_s)
    ensure_topics(kafka_config, [topics.owner_intake_spec(owner, intake)],
                  replication_factor=topics.settings.replication_factor,
                  timeout_s=timeout_s)  # fmt: skip
    if password is not None:
        upsert_users(kafka_config, {role.user: password}, timeout_s=timeout_s)
    apply_acls(kafka_config, topics, [role], timeout_s=timeout_s)
    log.info("owner door added", extra={"owner": owner, "principal": role.user})
    return role


def _partitions(kafka_config: Mapping[str, str | int], topic: str, timeout_s: float) -> int:
    """How many partitions ``topic`` has now."""
    admin = clients.admin_client(kafka_config, quiet=True)
    try:
        found = admin.list_topics(topic, timeout=timeout_s).topics.get(topic)
    except KafkaException as exc:  # no metadata within the timeout
        raise BrokerError(f"could not read {topic} within {timeout_s:g} s: {exc}") from exc
    if found is None or found.error is not None or not found.partitions:
        raise BrokerError(f"no topic {topic}: `jobstream topics create` makes it")
    return len(found.partitions)


def owners(kafka_config: Mapping[str, str | int], topics: Topics, *,
           timeout_s: float = 30.0) -> list[str]:  # fmt: skip
    """The owners that have an intake topic of their own, by name."""
    admin = clients.admin_client(kafka_config, quiet=True)
    try:
        names = admin.list_topics(timeout=timeout_s).topics
    except KafkaException as exc:  # no metadata within the timeout
        raise BrokerError(f"could not list the topics within {timeout_s:g} s: {exc}") from exc
    prefix = topics.settings.topic_prefix
    return sorted(owner for name in names if (owner := owner_of_topic(prefix, name)))
