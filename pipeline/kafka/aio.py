"""aiokafka producers built from the settings: the asyncio side of pipeline/kafka/clients.py.

aiokafka reads the same settings as librdkafka: :meth:`Settings.kafka_config` (the one
mapping, ``JOBSTREAM_LIBRDKAFKA`` included) is read key by key and each key is given its
aiokafka meaning. A key with none stops the client at construction with a
ConfigurationError naming the setting, rather than connecting with less security, or
another behaviour, than the process asked for.

Records go to the partition librdkafka's producers pick (:func:`java_partitioner`), and the
producer is tuned like theirs (:data:`~jobstream._pipeline.kafka.clients.PRODUCER_TUNING`:
idempotent, ``acks=all``, the same linger and largest record) but for compression: lz4
needs a codec package aiokafka does not bring, and the broker takes either.
"""

from __future__ import annotations

import logging
import os
import ssl
from typing import Any

from jobstream._pipeline.config import ENV_PREFIX, Settings
from jobstream._pipeline.errors import ConfigurationError
from jobstream._pipeline.kafka.clients import PRODUCER_TUNING
from jobstream._pipeline.partitioning import java_partition

log = logging.getLogger(__name__)

SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
"""What the asyncio client logs in with. GSSAPI (librdkafka's default when no mechanism
is set) and OAUTHBEARER take further librdkafka settings (a Kerberos keytab, an OIDC
endpoint) that aiokafka reads otherwise or not at all."""

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")

_CONNECTION_KEYS = frozenset({
    "bootstrap.servers", "client.id", "security.protocol", "sasl.mechanism", "sasl.username",
    "sasl.password", "ssl.ca.location", "ssl.certificate.location", "ssl.key.location",
    "ssl.key.password", "ssl.endpoint.identification.algorithm",
    "enable.ssl.certificate.verification",
})  # fmt: skip
"""The librdkafka keys aiokafka can honour; any other stops the client."""


def java_partitioner(key: bytes | None, all_partitions: list[int], available: list[int]) -> int:
    """aiokafka's partitioner hook: the partition librdkafka's ``murmur2_random`` (and
    Kafka's Java client) gives ``key``. It returns the partition number itself rather than
    indexing ``all_partitions``, whose order aiokafka takes from a set."""
    if key is None:
        raise ValueError("every record jobstream writes has a key")
    return java_partition(key, len(all_partitions))


def producer_options(settings: Settings, *, client_id: str,
                     request_timeout_ms: int) -> dict[str, Any]:  # fmt: skip
    """Keyword arguments of an idempotent ``AIOKafkaProducer`` for ``settings``.

    ``request_timeout_ms`` bounds each of its waits on the broker (metadata, a produce
    request). Raises ConfigurationError naming the first setting aiokafka cannot honour.
    """
    config = settings.kafka_config
    for key in config:
        if key not in _CONNECTION_KEYS:
            raise ConfigurationError(
                f"{_setting(settings, key)}: the asyncio client (aiokafka) has no "
                f"equivalent of librdkafka's {key!r}; use JobClient, or drop the setting"
            )
    protocol = str(config["security.protocol"]).upper()
    if protocol not in PROTOCOLS:
        raise ConfigurationError(
            f"{_setting(settings, 'security.protocol')}: expected one of {', '.join(PROTOCOLS)}"
        )
    options: dict[str, Any] = {
        "bootstrap_servers": str(config["bootstrap.servers"]),
        "client_id": str(config.get("client.id", client_id)),
        "security_protocol": protocol,
        "enable_idempotence": True,
        "acks": "all",
        "linger_ms": PRODUCER_TUNING["linger.ms"],
        "max_batch_size": PRODUCER_TUNING["batch.size"],
        "max_request_size": PRODUCER_TUNING["message.max.bytes"],
        "request_timeout_ms": request_timeout_ms,
        "partitioner": java_partitioner,
    }
    if protocol.startswith("SASL_"):
        options.update(_sasl(settings, config))
    if protocol.endswith("SSL"):
        options["ssl_context"] = ssl_context(settings)
    return options


def _sasl(settings: Settings, config: dict[str, str | int]) -> dict[str, str]:
    mechanism = str(config.get("sasl.mechanism", "")).upper()
    if mechanism not in SASL_MECHANISMS:
        what = f"{mechanism} is" if mechanism else "unset, librdkafka's default GSSAPI, is"
        raise ConfigurationError(
            f"{_setting(settings, 'sasl.mechanism')}: {what} not supported by the asyncio "
            f"client; it logs in with {', '.join(SASL_MECHANISMS)}"
        )
    for key in ("sasl.username", "sasl.password"):
        if not config.get(key):
            raise ConfigurationError(f"{_setting(settings, key)}: {mechanism} needs it")
    return {"sasl_mechanism": mechanism, "sasl_plain_username": str(config["sasl.username"]),
            "sasl_plain_password": str(config["sasl.password"])}  # fmt: skip


def ssl_context(settings: Settings) -> ssl.SSLContext:
    """The TLS context librdkafka's ``ssl.*`` settings describe: the CA file or directory
    (none or ``probe``: the system's), a client certificate and key, and verification of
    the broker's certificate and host name unless turned off."""
    config = settings.kafka_config
    ca = config.get("ssl.ca.location")
    try:
        if ca is None or ca == "probe":
            context = ssl.create_default_context()
        elif os.path.isdir(str(ca)):
            context = ssl.create_default_context(capath=str(ca))
        else:
            context = ssl.create_default_context(cafile=str(ca))
    except (OSError, ssl.SSLError) as exc:
        raise ConfigurationError(f"{_setting(settings, 'ssl.ca.location')}: {exc}") from exc
    certificate, key = config.get("ssl.certificate.location"), config.get("ssl.key.location")
    if key is not None and certificate is None:
        raise ConfigurationError(
            f"{_setting(settings, 'ssl.certificate.location')}: needed with a client key"
        )
    if certificate is not None:
        password = config.get("ssl.key.password")
        try:
            context.load_cert_chain(str(certificate), None if key is None else str(key),
                                    None if password is None else str(password))  # fmt: skip
        except (OSError, ssl.SSLError) as exc:
            which = "ssl.certificate.location" if key is None else "ssl.key.location"
            raise ConfigurationError(
                f"{_setting(settings, which)}: client certificate or key unreadable: {exc}"
            ) from exc
    if _off(config, "enable.ssl.certificate.verification", "false"):
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    elif _off(config, "ssl.endpoint.identification.algorithm", "none"):
        context.check_hostname = False
    return context


def _off(config: dict[str, str | int], key: str, off: str) -> bool:
    return str(config.get(key, "")).lower() == off


def _setting(settings: Settings, key: str) -> str:
    """The setting a librdkafka key comes from, as a user sets it."""
    if key in settings.librdkafka:
        return f"{ENV_PREFIX}LIBRDKAFKA[{key!r}]"
    return ENV_PREFIX + key.replace(".", "_").upper()
