"""The choice of a test session's broker (ops/kafka/session.py), without starting one.

The container branch needs a Docker engine, which the development machine does not
have: what is run here is the choice (where no engine answers, and as if one did) and
the container's environment; starting the container is not run.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from jobstream._ops.kafka import session
from jobstream._ops.kafka.session import (
    broker_source,
    container_env,
    docker_answers,
    session_broker,
)

ABSENT_SOCKET = "unix:///nonexistent/jobstream-test/docker.sock"


def test_a_socket_where_nothing_listens_is_no_docker_engine() -> None:
    assert docker_answers(ABSENT_SOCKET, timeout_s=1) is False


def test_a_given_broker_comes_first() -> None:
    env = {"KAFKA_BOOTSTRAP_SERVERS": "broker:9092"}
    assert broker_source(env, docker=lambda: True) == "given"


def test_with_no_docker_engine_the_local_jars_are_used() -> None:
    assert broker_source({}, docker=lambda: docker_answers(ABSENT_SOCKET, timeout_s=1)) == "local"
    assert broker_source({"KAFKA_BOOTSTRAP_SERVERS": ""}, docker=lambda: False) == "local"


def test_where_docker_answers_a_container_is_used() -> None:
    assert broker_source({}, docker=lambda: True) == "container"


def test_without_testcontainers_docker_is_not_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    asked = []
    monkeypatch.setattr(session.importlib.util, "find_spec", lambda name: None)
    assert broker_source({}, docker=lambda: asked.append(1) or True) == "local"
    assert asked == []


def test_a_given_broker_is_yielded_as_it_is(monkeypatch: pytest.MonkeyPatch,
                                            tmp_path: Path) -> None:  # fmt: skip
    monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:1")
    with session_broker(tmp_path, docker=lambda: pytest.fail("Docker asked")) as bootstrap:
        assert bootstrap == "127.0.0.1:1"
    assert list(tmp_path.iterdir()) == []


def test_the_container_is_configured_as_the_local_cluster() -> None:
    env = container_env(23456, "localhost")
    assert env["KAFKA_LISTENERS"] == "PLAINTEXT://0.0.0.0:23456,CONTROLLER://0.0.0.0:23556"
    assert env["KAFKA_ADVERTISED_LISTENERS"] == "PLAINTEXT://localhost:23456"
    assert env["KAFKA_PROCESS_ROLES"] == "broker,controller"
    assert env["KAFKA_CONTROLLER_QUORUM_VOTERS"] == "1@127.0.0.1:23556"
    assert env["KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR"] == "1"
    assert env["KAFKA_TRANSACTION_STATE_LOG_MIN_ISR"] == "1"
    assert env["KAFKA_AUTO_CREATE_TOPICS_ENABLE"] == "false"
    assert env["KAFKA_LOG_DIRS"] == session.CONTAINER_DATA
    assert env["CLUSTER_ID"]
