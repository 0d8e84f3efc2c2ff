"""Kafka client quotas: what ConfigCommand is asked and what its answer means (no broker;
tests/test_tenants_end_to_end.py sets them on the secured broker)."""

from __future__ import annotations

import pytest

from jobstream._ops.kafka.quotas import (
    ClientQuota,
    QuotaChange,
    alter_arguments,
    merged,
    parse_described,
)
from jobstream._pipeline.errors import ValidationError

DESCRIBED = (
    "Quota configs for user-principal 'jobstream-owner-b' are consumer_byte_rate=2048.0, "
    "producer_byte_rate=1024.0\n"
    """SCRAM credential configs for user-principal 'admin' are SCRAM-SHA-512=iterations=4096
Quota configs for user-principal 'jobstream-api' are producer_byte_rate=1.0E7
"""
)


def test_the_described_quotas_are_read_and_other_configs_passed_over() -> None:
    assert parse_described(DESCRIBED) == [
        ClientQuota("jobstream-owner-b", produce_bytes_per_s=1024, fetch_bytes_per_s=2048),
        ClientQuota("jobstream-api", produce_bytes_per_s=10_000_000),
    ]


def test_a_change_keeps_the_rate_it_does_not_give() -> None:
    current = ClientQuota("p", produce_bytes_per_s=10, fetch_bytes_per_s=20)
    assert merged(current, ClientQuota("p", fetch_bytes_per_s=5)) == ClientQuota("p", 10, 5)
    assert merged(None, ClientQuota("p", fetch_bytes_per_s=5)) == ClientQuota("p", None, 5)
    quota = ClientQuota("p", 10, 5)
    assert alter_arguments("p", quota.configs(), ["x"]) == [
        "--alter", "--entity-type", "users", "--entity-name", "p",
        "--add-config", "producer_byte_rate=10,consumer_byte_rate=5", "--delete-config", "x"]


@pytest.mark.parametrize("bad", [dict(principal=""), dict(principal="User:x"),
                                 dict(principal="p", produce_bytes_per_s=0)])  # fmt: skip
def test_a_bad_quota_is_refused_naming_the_field(bad: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        ClientQuota(**bad)  # type: ignore[arg-type]


def test_who_set_a_quota_travels_with_it() -> None:
    change = QuotaChange(ClientQuota("p", 10), "cli:ann@box as User:admin", 123)
    assert QuotaChange.decode(change.encode()) == change
    with pytest.raises(ValidationError, match="client quota"):
        QuotaChange.decode(b"{}")
