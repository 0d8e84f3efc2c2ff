"""Apply ops/kafka/acls.py to a cluster: the roles' SCRAM users and their ACLs.

Through the admin API (confluent_kafka's ``create_acls`` and
``alter_user_scram_credentials``), so it needs no jar and runs against any cluster the
settings reach, as a principal allowed to alter ACLs (a super user). Idempotent: an ACL
that exists is created again as a no-op, a user's password is set anew.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaException
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)

from jobstream._ops.kafka.acls import ROLES, Grant, grants, owner_grants, principal
from jobstream._pipeline.errors import BrokerError
from jobstream._pipeline.kafka import clients
from jobstream._pipeline.tenancy import owner_principal
from jobstream._pipeline.topics import Topics

log = logging.getLogger(__name__)

SCRAM_ITERATIONS = 8192
OWNER_ROLE = "owner"


@dataclass(frozen=True)
class Role:
    """One principal to provision: a role, and a worker's job type."""

    role: str
    job_type: str | None = None
    owner: str | None = None
    """An owner's principal: role ``owner``, and the owner (:meth:`of_owner`)."""

    @classmethod
    def of_owner(cls, owner: str) -> Role:
        owner_principal(owner)  # checks the name
        return cls(OWNER_ROLE, owner=owner)

    @property
    def user(self) -> str:
        if self.owner is not None:
            return owner_principal(self.owner)
        return principal(self.role, self.job_type)

    def grants(self, topics: Topics) -> list[Grant]:
        if self.owner is not None:
            return owner_grants(topics, self.owner)
        return grants(self.role, topics, self.job_type)


def every_role(job_types: Iterable[str]) -> list[Role]:
    """Each role once, a worker per job type."""
    roles = [Role(role) for role in ROLES if role != "worker"]
    return roles + [Role("worker", job_type) for job_type in job_types]


def bindings(user: str, found: Iterable[Grant]) -> list[AclBinding]:
    """One ALLOW binding per operation of each grant, for ``User:<user>`` from any host."""
    return [
        AclBinding(ResourceType[grant.resource], grant.name,
                   ResourcePatternType.PREFIXED if grant.prefixed else ResourcePatternType.LITERAL,
                   f"User:{user}", "*", AclOperation[operation], AclPermissionType.ALLOW)
        for grant in found for operation in grant.operations
    ]  # fmt: skip


def apply_acls(kafka_config: Mapping[str, str | int], topics: Topics, roles: Iterable[Role],
               *, timeout_s: float = 30.0) -> int:  # fmt: skip
    """Create every role's ACLs; the number of bindings."""
    wanted = [b for r in roles for b in bindings(r.user, r.grants(topics))]
    admin = clients.admin_client(kafka_config, quiet=True)
    futures = admin.create_acls(wanted, request_timeout=timeout_s)
    _results(futures, "creating ACLs", timeout_s)
    log.info("acls applied bindings=%d", len(wanted))
    return len(wanted)


def upsert_users(kafka_config: Mapping[str, str | int], passwords: Mapping[str, str],
                 *, timeout_s: float = 30.0) -> None:  # fmt: skip
    """Give each user its SCRAM-SHA-512 credential (made, or replaced)."""
    info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, SCRAM_ITERATIONS)
    admin = clients.admin_client(kafka_config, quiet=True)
    futures = admin.alter_user_scram_credentials(
        [UserScramCredentialUpsertion(user, info, password.encode())
         for user, password in passwords.items()], request_timeout=timeout_s)  # fmt: skip
    _results(futures, "setting SCRAM credentials", timeout_s)


def _results(futures: Mapping[Any, Future[Any]], what: str, timeout_s: float) -> None:
    problems = []
    for key, future in futures.items():
        try:
            future.result(timeout=timeout_s)
        except KafkaException as exc:
            problems.append(f"{key}: {exc.args[0].str()}")
        except TimeoutError:
            problems.append(f"{key}: no answer in {timeout_s:g} s")
    if problems:
        raise BrokerError(f"{what} failed:\n  " + "\n  ".join(problems[:20]))
