"""A Java client's properties (Kafka's own tools: ``--command-config``,
``--consumer.config``) that connect as librdkafka's settings do.

Kafka's tools are Java: they read ``security.protocol``, a JAAS line for SASL and a PEM
truststore where librdkafka reads ``sasl.username``/``sasl.password`` and
``ssl.ca.location``. This is the one translation, for ConfigCommand (client quotas) and
the console tools a user points at the secured broker (``jobstream kafka env --java``).
"""

from __future__ import annotations

from collections.abc import Mapping

from jobstream._pipeline.errors import BrokerError

PLAIN_LOGIN = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_LOGIN = "org.apache.kafka.common.security.scram.ScramLoginModule"


def java_properties(kafka_config: Mapping[str, str | int]) -> str:
    """A Java client's properties file equivalent to librdkafka's security settings:
    protocol, SASL (SCRAM or PLAIN) and the CA to trust. BrokerError for settings it cannot
    carry over (mutual TLS: a Java tool then needs a keystore of its own)."""
    protocol = str(kafka_config.get("security.protocol", "PLAINTEXT")).upper()
    lines = {"security.protocol": protocol}
    if "SASL" in protocol:
        mechanism = str(kafka_config.get("sasl.mechanism", "PLAIN")).upper()
        module = PLAIN_LOGIN if mechanism == "PLAIN" else SCRAM_LOGIN
        user, password = kafka_config.get("sasl.username"), kafka_config.get("sasl.password")
        lines["sasl.mechanism"] = mechanism
        lines["sasl.jaas.config"] = (f'{module} required username="{user}" '
                                     f'password="{password}";')  # fmt: skip
    if "SSL" in protocol:
        if kafka_config.get("ssl.certificate.location"):
            raise BrokerError("Kafka's Java tools (client quotas among them) cannot use "
                              "librdkafka's ssl.certificate.location: run as a SASL user")
        if kafka_config.get("ssl.ca.location"):
            lines["ssl.truststore.type"] = "PEM"
            lines["ssl.truststore.location"] = str(kafka_config["ssl.ca.location"])
    return "".join(f"{key}={value}\n" for key, value in lines.items())
