"""The choice of a test session's broker (ops/kafka/session.py), without starting one.

The container branch needs a Docker engine, which the development machine does not
have: what is run here is the choice (where no engine answers, and as if one did), the
container's environment, and the container's start and removal with a stand-in for
testcontainers' container; a real container is not started.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import testcontainers.core.container
from docker.errors import DockerException
from testcontainers.core.exceptions import ContainerStartException

from jobstream._ops.kafka import session
from jobstream._ops.kafka.session import (
    broker_source,
    container_env,
    docker_answers,
    session_broker,
)
from jobstream._pipeline.errors import BrokerError

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
    env = container_env(23456)
    assert env["KAFKA_LISTENERS"] == "PLAINTEXT://0.0.0.0:23456,CONTROLLER://0.0.0.0:23556"
    assert "KAFKA_ADVERTISED_LISTENERS" not in env, "set once the container runs"
    assert env["KAFKA_PROCESS_ROLES"] == "broker,controller"
    assert env["KAFKA_CONTROLLER_QUORUM_VOTERS"] == "1@127.0.0.1:23556"
    assert env["KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR"] == "1"
    assert env["KAFKA_TRANSACTION_STATE_LOG_MIN_ISR"] == "1"
    assert env["KAFKA_AUTO_CREATE_TOPICS_ENABLE"] == "false"
    assert env["KAFKA_LOG_DIRS"] == session.CONTAINER_DATA
    assert env["CLUSTER_ID"]


def test_a_property_becomes_the_images_variable() -> None:
    """The image's rule: ``_`` is ``__``, ``-`` is ``___``, ``.`` is ``_``."""
    assert session._env_name("a_b.c-d") == "KAFKA_A__B_C___D"
    assert session._env_name("log.dirs") == "KAFKA_LOG_DIRS"
    assert session._env_name("x-y") == "KAFKA_X___Y"


class StandIn:
    """testcontainers' DockerContainer as the session uses it, with no Docker engine: like
    the real one in its bridge and gateway modes, it knows its host only once started."""

    def __init__(self, image: str, *, start_error: BaseException | None = None,
                 exec_code: int = 0) -> None:  # fmt: skip
        self.image, self.start_error, self.exec_code = image, start_error, exec_code
        self.env: dict[str, str] = {}
        self.command: list[str] = []
        self.started = self.stopped = False
        self.executed: list[list[str]] = []

    def with_env(self, name: str, value: str) -> StandIn:
        self.env[name] = value
        return self

    def with_bind_ports(self, container: int, host: int) -> StandIn:
        return self

    def with_command(self, command: list[str]) -> StandIn:
        self.command = command
        return self

    def start(self) -> StandIn:
        if self.start_error is not None:
            raise self.start_error
        self.started = True
        return self

    def get_container_host_ip(self) -> str:
        if not self.started:
            raise ContainerStartException("Container is not started")
        return "172.17.0.1"

    def exec(self, command: list[str]) -> SimpleNamespace:
        self.executed.append(command)
        return SimpleNamespace(exit_code=self.exec_code, output=b"sh: read-only file system")

    def stop(self) -> None:
        self.stopped = True


@dataclass
class Engine:
    """Makes :class:`StandIn` containers with ``options``, and keeps them."""

    options: dict[str, Any] = field(default_factory=dict)
    made: list[StandIn] = field(default_factory=list)

    def __call__(self, image: str) -> StandIn:
        self.made.append(StandIn(image, **self.options))
        return self.made[-1]


@pytest.fixture
def engine(monkeypatch: pytest.MonkeyPatch) -> Engine:
    """Every container the session makes is a stand-in; its broker answers at once."""
    made = Engine()
    monkeypatch.setattr(testcontainers.core.container, "DockerContainer", made)
    monkeypatch.setattr(session, "_wait_answers", lambda bootstrap, container: None)
    return made


def test_the_container_advertises_where_it_is_reached_once_started(engine: Engine) -> None:
    with session._container() as bootstrap:
        (container,) = engine.made
        host, port = bootstrap.rsplit(":", 1)
        assert host == "172.17.0.1" and container.started and not container.stopped
        assert container.image.startswith("apache/kafka:")
        assert container.env["KAFKA_LISTENERS"].startswith(f"PLAINTEXT://0.0.0.0:{port},")
        (written,) = container.executed
        assert f"PLAINTEXT://172.17.0.1:{port}" in written[-1]
        assert session.ADVERTISED in written[-1]
        assert session.ADVERTISED in container.command[-1]
    assert container.stopped


NOT_STARTED = [ContainerStartException("no image"), DockerException("engine gone"),
               ConnectionError("refused")]  # fmt: skip


@pytest.mark.parametrize("error", NOT_STARTED)
def test_a_container_that_does_not_start_is_a_broker_error_and_is_removed(
    engine: Engine, error: BaseException
) -> None:
    engine.options["start_error"] = error
    with pytest.raises(BrokerError, match="did not start"), session._container():
        pytest.fail("a container that did not start was yielded")
    (container,) = engine.made
    assert container.stopped


def test_a_container_whose_listeners_cannot_be_set_is_removed(engine: Engine) -> None:
    engine.options["exec_code"] = 1
    with pytest.raises(BrokerError, match="read-only"), session._container():
        pytest.fail("a container with no listeners was yielded")
    (container,) = engine.made
    assert container.stopped


def test_a_container_whose_broker_never_answers_is_removed(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    def never(bootstrap: str, container: object) -> None:
        raise BrokerError("the Kafka container did not answer")

    monkeypatch.setattr(session, "_wait_answers", never)
    with pytest.raises(BrokerError, match="did not answer"), session._container():
        pytest.fail("a broker that never answered was yielded")
    (container,) = engine.made
    assert container.stopped
