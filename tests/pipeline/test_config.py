from __future__ import annotations

import subprocess
import sys

import pytest

from jobstream._pipeline.config import load_settings
from jobstream._pipeline.errors import ConfigurationError


def test_defaults_point_at_the_local_broker(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JOBSTREAM_BOOTSTRAP_SERVERS", raising=False)
    settings = load_settings()
    assert settings.kafka_config == {
        "bootstrap.servers": "127.0.0.1:9092",
        "security.protocol": "PLAINTEXT",
    }


def test_security_settings_map_to_librdkafka_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JOBSTREAM_BOOTSTRAP_SERVERS", "kafka-1.prod:9093,kafka-2.prod:9093")
    monkeypatch.setenv("JOBSTREAM_SECURITY_PROTOCOL", "SASL_SSL")
    monkeypatch.setenv("JOBSTREAM_SASL_MECHANISM", "SCRAM-SHA-512")
    monkeypatch.setenv("JOBSTREAM_SASL_USERNAME", "scheduler")
    monkeypatch.setenv("JOBSTREAM_SASL_PASSWORD", "s3cret")
    monkeypatch.setenv("JOBSTREAM_SSL_CA_LOCATION", "/etc/ssl/ca.pem")
    monkeypatch.setenv("JOBSTREAM_LIBRDKAFKA", '{"client.rack": "eu-west-1a"}')
    settings = load_settings()
    assert settings.kafka_config == {
        "bootstrap.servers": "kafka-1.prod:9093,kafka-2.prod:9093",
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "scheduler",
        "sasl.password": "s3cret",
        "ssl.ca.location": "/etc/ssl/ca.pem",
        "client.rack": "eu-west-1a",
    }
    assert "s3cret" not in repr(settings)


def test_job_types_from_a_comma_list(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JOBSTREAM_JOB_TYPES", "email.send, video.encode")
    assert load_settings().job_types == ("email.send", "video.encode")


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("JOBSTREAM_TIMER_PARTITIONS", "0"),
        ("JOBSTREAM_BOOTSTRAP_SERVERS", "no-port-here"),
        ("JOBSTREAM_SECURITY_PROTOCOL", "CARRIER_PIGEON"),
        ("JOBSTREAM_LIBRDKAFKA", "not json"),
    ],
)
def test_a_bad_setting_names_the_variable(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str
) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(ConfigurationError, match=variable):
        load_settings()


@pytest.mark.usefixtures("child_processes")
def test_a_bad_setting_stops_the_process_at_start() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "jobstream", "topics", "create"],
        capture_output=True,
        text=True,
        timeout=60,
        env={"JOBSTREAM_TIMER_PARTITIONS": "many", "PATH": ""},
    )
    assert result.returncode == 3
    assert "JOBSTREAM_TIMER_PARTITIONS" in result.stderr


def test_owner_weights_from_json_and_a_weight_that_is_not_positive_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("JOBSTREAM_OWNER_WEIGHTS", '{"acme": 3, "*": 0.5}')
    assert load_settings().owner_weights == {"acme": 3.0, "*": 0.5}
    monkeypatch.setenv("JOBSTREAM_OWNER_WEIGHTS", '{"acme": 0}')
    with pytest.raises(ConfigurationError, match=r"JOBSTREAM_OWNER_WEIGHTS.*acme"):
        load_settings()


def test_results_and_run_logs_settings_default_to_a_week_and_bounds_of_their_own() -> None:
    settings = load_settings()
    assert settings.max_result_bytes == 1024 * 1024
    assert (settings.max_log_lines, settings.max_log_bytes) == (1000, 256 * 1024)
    assert settings.results_retention == settings.logs_retention == 7 * 86_400_000


@pytest.mark.parametrize(("retention", "largest"), [
    ("JOBSTREAM_RESULTS_RETENTION", "JOBSTREAM_MAX_RESULT_BYTES"),
    ("JOBSTREAM_LOGS_RETENTION", "JOBSTREAM_MAX_LOG_BYTES"),
])  # fmt: skip
def test_a_retention_reads_a_duration_and_a_size_bound_stays_under_a_message(
    monkeypatch: pytest.MonkeyPatch, retention: str, largest: str
) -> None:
    field = retention.removeprefix("JOBSTREAM_").lower()
    monkeypatch.setenv(retention, "36h")
    assert getattr(load_settings(), field) == 36 * 3_600_000
    monkeypatch.setenv(retention, "a while")
    with pytest.raises(ConfigurationError, match=retention):
        load_settings()
    monkeypatch.delenv(retention)
    monkeypatch.setenv(largest, str(4 * 1024 * 1024))
    with pytest.raises(ConfigurationError, match=largest):
        load_settings()


def test_max_log_lines_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JOBSTREAM_MAX_LOG_LINES", "50")
    assert load_settings().max_log_lines == 50


def test_the_fire_lead_reads_a_duration_of_at_most_ten_seconds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert load_settings().fire_lead == 1000
    monkeypatch.setenv("JOBSTREAM_FIRE_LEAD", "750ms")
    assert load_settings().fire_lead == 750
    monkeypatch.setenv("JOBSTREAM_FIRE_LEAD", "0s")
    assert load_settings().fire_lead == 0
    for bad in ("20s", "soon"):
        monkeypatch.setenv("JOBSTREAM_FIRE_LEAD", bad)
        with pytest.raises(ConfigurationError, match="JOBSTREAM_FIRE_LEAD"):
            load_settings()


def test_min_insync_replicas_above_the_replication_factor_is_refused() -> None:
    assert load_settings(replication_factor=3, min_insync_replicas=2).min_insync_replicas == 2
    with pytest.raises(ConfigurationError, match="JOBSTREAM_MIN_INSYNC_REPLICAS: .*exceeds "
                       r"the replication factor \(1\)"):  # fmt: skip
        load_settings(replication_factor=1, min_insync_replicas=2)
