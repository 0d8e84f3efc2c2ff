"""The clients' settings: the project's tuning, the caller's overrides, then the user's own."""

from __future__ import annotations

import pytest

from jobstream._pipeline.config import load_settings
from jobstream._pipeline.kafka.clients import (
    CLIENT_ID,
    TRANSACTION_TIMEOUT_MS,
    TRANSACTIONAL_LINGER_MS,
    consumer_config,
    producer_config,
)


def test_the_users_librdkafka_settings_win_over_the_tuning(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JOBSTREAM_LIBRDKAFKA",
                       '{"compression.type": "zstd", "fetch.wait.max.ms": "5"}')  # fmt: skip
    settings = load_settings()

    produced = producer_config(settings, transactional_id="t-1", **{"linger.ms": 50})
    consumed = consumer_config(settings, "g", **{"fetch.wait.max.ms": 100})

    assert produced["compression.type"] == "zstd"
    assert produced["transactional.id"] == "t-1" and produced["linger.ms"] == 50
    assert consumed["fetch.wait.max.ms"] == "5" and consumed["group.id"] == "g"


def test_without_settings_of_their_own_clients_get_the_tuning(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("JOBSTREAM_LIBRDKAFKA", raising=False)
    settings = load_settings()

    assert producer_config(settings)["compression.type"] == "lz4"
    assert consumer_config(settings, "g", **{"fetch.wait.max.ms": 100})["fetch.wait.max.ms"] == 100


def test_a_transactional_producer_lingers_until_its_commit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JOBSTREAM_LIBRDKAFKA", raising=False)
    settings = load_settings()

    assert producer_config(settings)["linger.ms"] == 5
    assert producer_config(settings, transactional_id="t-1")["linger.ms"] == TRANSACTIONAL_LINGER_MS
    assert TRANSACTIONAL_LINGER_MS >= 1000
    assert producer_config(settings, transactional_id="t-1")["transaction.timeout.ms"] == (
        TRANSACTION_TIMEOUT_MS
    )  # fmt: skip


def test_each_client_tells_the_broker_which_component_it_is(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("JOBSTREAM_LIBRDKAFKA", raising=False)
    settings = load_settings()

    assert producer_config(settings)["client.id"] == CLIENT_ID
    assert producer_config(settings, transactional_id="p.timers.0")["client.id"] == "p.timers.0"
    assert consumer_config(settings, "p.status")["client.id"] == "p.status"
    monkeypatch.setenv("JOBSTREAM_LIBRDKAFKA", '{"client.id": "mine"}')
    assert consumer_config(load_settings(), "p.status")["client.id"] == "mine"
