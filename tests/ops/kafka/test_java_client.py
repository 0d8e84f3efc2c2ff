"""Kafka's Java tools log in as librdkafka's settings do: one translation, for
ConfigCommand (client quotas) and the console tools on the local secured broker."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobstream._ops.kafka.java_client import java_properties
from jobstream._ops.kafka.secure import SCRAM, Security
from jobstream._pipeline.errors import BrokerError


def test_the_java_tools_log_in_as_the_settings_do() -> None:
    text = java_properties({"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
                            "sasl.username": "admin", "sasl.password": "pw",
                            "ssl.ca.location": "/ca.pem"})  # fmt: skip
    assert "security.protocol=SASL_SSL\n" in text
    assert 'ScramLoginModule required username="admin" password="pw";' in text
    assert "ssl.truststore.type=PEM\nssl.truststore.location=/ca.pem\n" in text
    assert "PlainLoginModule" in java_properties({"security.protocol": "SASL_PLAINTEXT"})
    assert java_properties({}) == "security.protocol=PLAINTEXT\n"
    with pytest.raises(BrokerError, match=r"ssl\.certificate\.location"):
        java_properties({"security.protocol": "SSL", "ssl.certificate.location": "/c.pem"})


def test_a_console_tool_on_the_secured_broker_logs_in_as_its_user(tmp_path: Path) -> None:
    security = Security(tmp_path / "security")
    lines = dict(line.split("=", 1) for line in
                 security.java_properties("jobstream-console").splitlines())  # fmt: skip
    password = security.password("jobstream-console")
    assert lines["security.protocol"] == "SASL_SSL" and lines["sasl.mechanism"] == SCRAM
    assert (f'ScramLoginModule required username="jobstream-console" password="{password}";'
            in lines["sasl.jaas.config"])  # fmt: skip
    assert lines["ssl.truststore.location"] == str(security.tls().ca)
