"""Kafka's client quotas per principal: how many bytes a second it may produce and fetch.

The broker enforces them: a principal past its rate has its responses delayed (and its
channel muted) for as long as brings it back under, and the client is told how long
(``throttle_time_ms``). confluent-kafka's AdminClient has no client-quota call, so this
runs Kafka's own ``kafka.admin.ConfigCommand`` (``kafka-configs --entity-type users``)
from the local broker's jars, with a Java client's properties made from the settings, as
a principal allowed to alter the cluster's configuration (a super user). Each change is
also written, with who made it, to the compacted jobs.client-quotas topic (the broker
keeps the quota, not who set it).
"""

from __future__ import annotations

import logging
import re
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import orjson

from jobstream._ops.kafka import jars
from jobstream._ops.kafka.java_client import java_properties
from jobstream._pipeline.clock import now_ms
from jobstream._pipeline.config import Settings
from jobstream._pipeline.errors import BrokerError, ValidationError
from jobstream._pipeline.kafka.follow import apply_setting, read_settings_topic, write_setting
from jobstream._pipeline.topics import Topics

log = logging.getLogger(__name__)

PRODUCE, FETCH = "producer_byte_rate", "consumer_byte_rate"
"""Kafka's names of the two quotas (bytes per second, per broker)."""
TIMEOUT_S = 60.0
"""A JVM's start, TLS and SASL on a loaded machine take seconds; the call itself is one."""
_DESCRIBED = re.compile(r"Quota configs for user-principal '(?P<user>[^']*)' are (?P<configs>.*)")


@dataclass(frozen=True)
class ClientQuota:
    """A principal's quotas; None: not bounded."""

    principal: str
    """The SCRAM user (without ``User:``)."""
    produce_bytes_per_s: int | None = None
    fetch_bytes_per_s: int | None = None

    def __post_init__(self) -> None:
        if not self.principal or self.principal.startswith("User:"):
            raise ValidationError("principal", f"a user name, without 'User:'; got "
                                               f"{self.principal!r}")  # fmt: skip
        for name in ("produce_bytes_per_s", "fetch_bytes_per_s"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValidationError(name, f"must be 1 or more bytes a second; got {value}")

    def configs(self) -> dict[str, int]:
        """Kafka's quota configs this sets."""
        found = {PRODUCE: self.produce_bytes_per_s, FETCH: self.fetch_bytes_per_s}
        return {name: value for name, value in found.items() if value is not None}


@dataclass(frozen=True)
class QuotaChange:
    """A change as jobs.client-quotas records it: the quota, who made it and when."""

    quota: ClientQuota
    set_by: str
    at_ms: int

    def encode(self) -> bytes:
        return orjson.dumps({"principal": self.quota.principal,
                             "produce_bytes_per_s": self.quota.produce_bytes_per_s,
                             "fetch_bytes_per_s": self.quota.fetch_bytes_per_s,
                             "set_by": self.set_by, "at_ms": self.at_ms})  # fmt: skip

    @classmethod
    def decode(cls, raw: bytes) -> QuotaChange:
        """A jobs.client-quotas value; ValidationError naming what is wrong."""
        try:
            data = orjson.loads(raw)
            quota = ClientQuota(data["principal"], data.get("produce_bytes_per_s"),
                                data.get("fetch_bytes_per_s"))  # fmt: skip
            return cls(quota, str(data["set_by"]), int(data["at_ms"]))
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
            raise ValidationError("client quota", f"not a change record: {exc!r}") from None


def alter_arguments(principal: str, add: Mapping[str, int], delete: Sequence[str]) -> list[str]:
    """ConfigCommand's arguments that add (or replace) and delete quota configs of
    ``principal`` (it refuses to delete one that is not set)."""
    arguments = ["--alter", "--entity-type", "users", "--entity-name", principal]
    if add:
        arguments += ["--add-config", ",".join(f"{k}={v}" for k, v in add.items())]
    if delete:
        arguments += ["--delete-config", ",".join(delete)]
    return arguments


def merged(current: ClientQuota | None, change: ClientQuota) -> ClientQuota:
    """The quota after ``change``: the rates it gives, the others as they were."""
    def rate(name: str) -> int | None:
        given = getattr(change, name)
        return given if given is not None or current is None else getattr(current, name)

    return ClientQuota(change.principal, rate("produce_bytes_per_s"), rate("fetch_bytes_per_s"))


def parse_described(text: str) -> list[ClientQuota]:
    """ConfigCommand's ``--describe --entity-type users`` output as quotas (lines of other
    configs, such as SCRAM credentials, are not quotas)."""
    found = []
    for line in text.splitlines():
        match = _DESCRIBED.fullmatch(line.strip())
        if match is None:
            continue
        configs = dict(part.strip().split("=", 1) for part in match["configs"].split(",")
                       if "=" in part)  # fmt: skip
        rate = {name: int(float(configs[name])) for name in (PRODUCE, FETCH) if name in configs}
        if rate:
            found.append(ClientQuota(match["user"], rate.get(PRODUCE), rate.get(FETCH)))
    return found


def config_command(settings: Settings, arguments: Sequence[str], *,
                   timeout_s: float = TIMEOUT_S) -> str:  # fmt: skip
    """Run ConfigCommand against the settings' cluster as their principal; its output.
    BrokerError naming the failure (its last lines) or the timeout."""
    with tempfile.TemporaryDirectory(prefix="jobstream-quotas-") as folder:
        properties = Path(folder) / "client.properties"
        properties.touch(mode=0o600)
        properties.write_text(java_properties(settings.kafka_config))
        # Its log goes into the folder, and with it.
        command = jars.java_command(
            "kafka.admin.ConfigCommand", "--bootstrap-server", settings.bootstrap_servers,
            "--command-config", str(properties), *arguments, logs=Path(folder))
        try:
            run = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s)
        except subprocess.TimeoutExpired as exc:
            raise BrokerError(f"Kafka's ConfigCommand did not answer within {timeout_s:g} s "
                              f"(is {settings.bootstrap_servers} up?)") from exc  # fmt: skip
    if run.returncode != 0:
        tail = "\n".join((run.stdout + run.stderr).strip().splitlines()[-8:])
        raise BrokerError(f"Kafka's ConfigCommand failed ({' '.join(arguments[:2])}):\n{tail}")
    return run.stdout


def set_quota(settings: Settings, change: ClientQuota, *, set_by: str) -> QuotaChange:
    """Bound ``change.principal`` on the broker (the rates it gives; the others as they
    were), then record the quota and who set it."""
    quota = merged(_current(settings, change.principal), change)
    config_command(settings, alter_arguments(quota.principal, quota.configs(), ()))
    return _record(settings, quota, set_by)


def clear_quota(settings: Settings, principal: str, *, set_by: str) -> QuotaChange:
    """Remove ``principal``'s quotas on the broker, and record who did."""
    current = _current(settings, principal)
    if current is not None:
        config_command(settings, alter_arguments(principal, {}, list(current.configs())))
    return _record(settings, ClientQuota(principal), set_by)


def _current(settings: Settings, principal: str) -> ClientQuota | None:
    return next(iter(read_quotas(settings, principal)), None)


def _record(settings: Settings, quota: ClientQuota, set_by: str) -> QuotaChange:
    change = QuotaChange(quota, set_by, now_ms())
    write_setting(settings, Topics(settings).client_quotas, quota.principal, change.encode())
    log.info("client quota set", extra={"principal": quota.principal, "set_by": set_by,
                                        **quota.configs()})  # fmt: skip
    return change


def read_quotas(settings: Settings, principal: str | None = None) -> list[ClientQuota]:
    """The quotas the broker holds (of ``principal``, or of every user)."""
    arguments = ["--describe", "--entity-type", "users"]
    if principal is not None:
        arguments += ["--entity-name", principal]
    return parse_described(config_command(settings, arguments))


def read_changes(settings: Settings) -> dict[str, QuotaChange]:
    """The latest recorded change of each principal's quotas (jobs.client-quotas)."""
    latest: dict[str, QuotaChange] = {}
    read_settings_topic(settings, Topics(settings).client_quotas, lambda message: apply_setting(
        message, key=str, decode=QuotaChange.decode, set_to=latest.__setitem__,
        clear=lambda name: _forget(latest, name)))  # fmt: skip
    return latest


def _forget(latest: dict[str, QuotaChange], name: str) -> None:
    latest.pop(name, None)
