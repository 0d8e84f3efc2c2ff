"""The settings as aiokafka reads them: the same security as librdkafka, or a refusal at
construction naming the setting."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest
from aiokafka.partitioner import DefaultPartitioner

from jobstream._pipeline.config import Settings
from jobstream._pipeline.errors import ConfigurationError
from jobstream._pipeline.kafka.aio import java_partitioner, producer_options
from jobstream._pipeline.partitioning import java_partition

CA_FILE = ssl.get_default_verify_paths().cafile or ssl.get_default_verify_paths().openssl_cafile


def options(**settings: object) -> dict[str, object]:
    return producer_options(Settings(**settings), client_id="test",  # type: ignore[arg-type]
                            request_timeout_ms=5000)  # fmt: skip


def refusal(**settings: object) -> str:
    with pytest.raises(ConfigurationError) as refused:
        options(**settings)
    return str(refused.value)


def test_a_plain_producer_is_idempotent_and_partitions_like_librdkafka() -> None:
    found = options(bootstrap_servers="k1:9092,k2:9092")
    assert found["bootstrap_servers"] == "k1:9092,k2:9092"
    assert found["security_protocol"] == "PLAINTEXT"
    assert (found["enable_idempotence"], found["acks"]) == (True, "all")
    assert found["request_timeout_ms"] == 5000
    assert found["partitioner"] is java_partitioner
    assert found["max_request_size"] > 2 * 1024 * 1024, "a record of 1 MB of params fits"
    assert "ssl_context" not in found and "sasl_mechanism" not in found


def test_sasl_over_tls_logs_in_with_scram_and_checks_the_broker_s_certificate() -> None:
    found = options(security_protocol="SASL_SSL", sasl_mechanism="scram-sha-512",
                    sasl_username="jobstream-client", sasl_password="s3cret",
                    ssl_ca_location=CA_FILE)  # fmt: skip
    assert (found["sasl_mechanism"], found["sasl_plain_username"],
            found["sasl_plain_password"]) == ("SCRAM-SHA-512", "jobstream-client", "s3cret")
    context = found["ssl_context"]
    assert isinstance(context, ssl.SSLContext)
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname


def test_host_name_checking_follows_librdkafka_s_setting() -> None:
    context = options(security_protocol="SSL", ssl_ca_location=CA_FILE,
                      librdkafka={"ssl.endpoint.identification.algorithm": "none"},
                      )["ssl_context"]  # fmt: skip
    assert isinstance(context, ssl.SSLContext)
    assert not context.check_hostname and context.verify_mode == ssl.CERT_REQUIRED


@pytest.mark.parametrize(
    ("settings", "named"),
    [
        ({"security_protocol": "SASL_SSL", "sasl_username": "u", "sasl_password": "p"},
         "JOBSTREAM_SASL_MECHANISM: unset, librdkafka's default GSSAPI"),
        ({"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "OAUTHBEARER"},
         "JOBSTREAM_SASL_MECHANISM: OAUTHBEARER is not supported"),
        ({"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "PLAIN", "sasl_username": "u"},
         "JOBSTREAM_SASL_PASSWORD: PLAIN needs it"),
        ({"security_protocol": "SSL", "ssl_ca_location": "/nowhere/ca.pem"},
         "JOBSTREAM_SSL_CA_LOCATION: "),
        ({"security_protocol": "SSL", "ssl_key_location": "/nowhere/client.key"},
         "JOBSTREAM_SSL_CERTIFICATE_LOCATION: needed with a client key"),
        ({"librdkafka": {"socket.keepalive.enable": "true"}},
         "JOBSTREAM_LIBRDKAFKA['socket.keepalive.enable']: the asyncio client (aiokafka) has "
         "no equivalent"),
        ({"librdkafka": {"security.protocol": "sasl_ssl", "sasl.mechanism": "GSSAPI"}},
         "JOBSTREAM_LIBRDKAFKA['sasl.mechanism']: GSSAPI is not supported"),
    ],
)  # fmt: skip
def test_a_setting_aiokafka_cannot_honour_stops_it_naming_the_setting(
    settings: dict[str, object], named: str
) -> None:
    assert named in refusal(**settings)


def test_a_client_certificate_that_cannot_be_read_is_named(tmp_path: Path) -> None:
    (tmp_path / "client.pem").write_text("not a certificate")
    assert "JOBSTREAM_SSL_CERTIFICATE_LOCATION: client certificate or key unreadable" in refusal(
        security_protocol="SSL", ssl_certificate_location=str(tmp_path / "client.pem"))


@pytest.mark.parametrize("partitions", [1, 2, 3, 6, 7, 64])
def test_the_partitioner_is_java_s_whatever_order_aiokafka_lists_partitions_in(
    partitions: int,
) -> None:
    keys = [f"01J{n:023d}".encode() for n in range(200)] + [b"wf-7", b"nightly", b"K" * 26]
    listed = list(range(partitions))[::-1]  # aiokafka lists them from a set: any order
    for key in keys:
        expected = java_partition(key, partitions)
        assert java_partitioner(key, listed, []) == expected
        # aiokafka's own default agrees when the list happens to be sorted
        assert DefaultPartitioner()(key, sorted(listed), []) == expected
