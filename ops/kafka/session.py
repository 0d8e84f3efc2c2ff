"""The broker of a test session: the one given, one in a container, or one from the jars.

:func:`session_broker` makes the choice, once, for the project's own tests
(tests/conftest.py's ``kafka_bootstrap``) and for a user's (the ``jobstream_broker``
fixture of jobstream/pytest_plugin.py), in this order (:func:`broker_source`):

1. ``KAFKA_BOOTSTRAP_SERVERS`` when set: a broker someone else runs;
2. a container of the ``apache/kafka`` image, at the version the jars pin, started with
   testcontainers (the ``testing`` extra) where a Docker engine answers
   (:func:`docker_answers`): nothing to install but Docker;
3. otherwise a one-node cluster of the local Kafka jars (:class:`LocalCluster`, which
   fetches them with Maven once), in the session's temporary folder.

Either broker started here is configured as the local cluster is (:func:`server_properties`:
one replica, transactions, the record size), listens on free loopback ports, and is
stopped when the session ends. One that cannot start raises :class:`BrokerError`: the
fixture decides whether that fails the run or skips its tests.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import shlex
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from jobstream._ops.kafka import jars
from jobstream._ops.kafka.cluster import Layout, LocalCluster, server_properties
from jobstream._ops.kafka.ports import free_base_port
from jobstream._pipeline.errors import BrokerError
from jobstream._pipeline.kafka import clients

if TYPE_CHECKING:
    from testcontainers.core.container import DockerContainer

log = logging.getLogger(__name__)

BOOTSTRAP_ENV = "KAFKA_BOOTSTRAP_SERVERS"
HEAP_MB = 512
START_TIMEOUT_S = 120.0
"""A container's first start pulls its image."""
CONTAINER_DATA = "/var/lib/kafka/data"

Source = Literal["given", "container", "local"]


def broker_source(env: Mapping[str, str], docker: Callable[[], bool]) -> Source:
    """Where the session's broker comes from: ``given`` (``KAFKA_BOOTSTRAP_SERVERS``),
    ``container`` (testcontainers installed and ``docker()`` answering) or ``local``."""
    if env.get(BOOTSTRAP_ENV):
        return "given"
    if importlib.util.find_spec("testcontainers") is not None and docker():
        return "container"
    return "local"


def docker_answers(host: str | None = None, timeout_s: float = 3.0) -> bool:
    """Whether a Docker engine answers a ping at ``host`` (``unix:///var/run/docker.sock``,
    ``tcp://...``); by default where testcontainers looks (``DOCKER_HOST``, else the
    local socket)."""
    import docker
    from docker.errors import DockerException

    try:
        client = (docker.DockerClient(base_url=host, timeout=int(timeout_s)) if host
                  else docker.from_env(timeout=int(timeout_s)))  # fmt: skip
        try:
            return bool(client.ping())
        finally:
            client.close()
    except (DockerException, OSError) as exc:  # requests' errors are OSErrors
        log.debug("no Docker engine: %s", exc)
        return False


@contextmanager
def session_broker(home: Path, *, docker: Callable[[], bool] = docker_answers) -> Iterator[str]:
    """The bootstrap servers of the session's broker (:func:`broker_source`), stopped at
    the end if started here; ``home`` holds a local cluster's files. Raises BrokerError
    when the broker cannot start."""
    source = broker_source(os.environ, docker)
    if source == "given":
        yield os.environ[BOOTSTRAP_ENV]
    elif source == "container":
        with _container() as bootstrap:
            yield bootstrap
    else:
        with _local(home) as bootstrap:
            yield bootstrap


@contextmanager
def _local(home: Path) -> Iterator[str]:
    cluster = LocalCluster(home)
    try:
        layout = cluster.up(nodes=1, port=free_base_port(1), heap_mb=HEAP_MB)
    except BaseException:
        cluster.down()
        raise
    try:
        yield layout.bootstrap
    finally:
        cluster.down()


def container_env(port: int) -> dict[str, str]:
    """The environment of an ``apache/kafka`` container whose broker listens on ``port``
    (bound to the same port of the host): the local cluster's server properties,
    listening on every interface. The address it advertises is set once the container
    runs (:data:`ADVERTISE`), when the address clients reach it at is known."""
    layout = Layout.plan(nodes=1, port=port, heap_mb=HEAP_MB)
    node = layout.nodes[0]
    text = server_properties(layout, node, Path(CONTAINER_DATA))
    properties = dict(line.split("=", 1) for line in text.splitlines())
    properties.update({
        "listeners": f"PLAINTEXT://0.0.0.0:{node.port},CONTROLLER://0.0.0.0:{node.controller_port}",
        "log.dirs": CONTAINER_DATA,
    })  # fmt: skip
    properties.pop("advertised.listeners", None)
    env = {_env_name(key): value for key, value in properties.items()}
    env["CLUSTER_ID"] = layout.cluster_id
    env["KAFKA_HEAP_OPTS"] = f"-Xmx{HEAP_MB}m -Xms{HEAP_MB}m"
    return env


def _env_name(key: str) -> str:
    """The apache/kafka image's variable for a server property: ``_`` is ``__``, ``-`` is
    ``___`` and ``.`` is ``_`` (underscores doubled first, or a dash's would be again)."""
    return "KAFKA_" + key.replace("_", "__").replace("-", "___").replace(".", "_").upper()


ADVERTISED = "/tmp/jobstream-advertised-listeners"
"""Written into the container once it runs: the listeners its broker advertises."""
ADVERTISE = ("sh", "-c", f"while [ ! -f {ADVERTISED} ]; do sleep 0.1; done; "
             f'export KAFKA_ADVERTISED_LISTENERS="$(cat {ADVERTISED})"; '
             "exec /etc/kafka/docker/run")  # fmt: skip
"""The container's command: the image's own, once the advertised listeners are written.
Where clients reach the container (testcontainers' ``get_container_host_ip``) is known
only once it runs: inside a container, the address is its bridge or gateway IP."""


def advertised_listeners(host: str, port: int) -> str:
    return f"PLAINTEXT://{host}:{port}"


@contextmanager
def _container() -> Iterator[str]:
    """A broker in a container (not run on the development machine: it has no Docker
    engine; tests/ops/kafka/test_session.py covers the choice, the environment, and a
    start that fails, with a stand-in for the container)."""
    from docker.errors import DockerException
    from testcontainers.core.container import DockerContainer
    from testcontainers.core.exceptions import ContainerStartException

    port = free_base_port(1)
    container: DockerContainer | None = None
    try:
        try:
            container = DockerContainer(f"apache/kafka:{jars.kafka_version()}")
            for name, value in container_env(port).items():
                container.with_env(name, value)
            container.with_bind_ports(port, port)
            container.with_command(list(ADVERTISE))
            container.start()
            host = container.get_container_host_ip()
            _advertise(container, advertised_listeners(host, port))
        except (ContainerStartException, DockerException, OSError) as exc:
            raise BrokerError(f"the Kafka container did not start: {exc}") from exc
        bootstrap = f"{host}:{port}"
        _wait_answers(bootstrap, container)
        yield bootstrap
    finally:
        if container is not None:
            _stop(container)


def _advertise(container: DockerContainer, listeners: str) -> None:
    """Write the listeners where the container's command waits for them (whole, as a
    rename makes them appear)."""
    partial = f"{ADVERTISED}.partial"
    result = container.exec(["sh", "-c", f"printf %s {shlex.quote(listeners)} > {partial} "
                                         f"&& mv {partial} {ADVERTISED}"])  # fmt: skip
    if result.exit_code != 0:
        raise BrokerError(f"the Kafka container's listeners could not be set: "
                          f"{result.output.decode(errors='replace')}")  # fmt: skip


def _stop(container: DockerContainer) -> None:
    """Remove the container; an engine gone meanwhile is logged, not raised over the
    error that ended the session."""
    from docker.errors import DockerException

    try:
        container.stop()
    except (DockerException, OSError) as exc:
        log.warning("the Kafka container could not be removed: %s", exc)


def _wait_answers(bootstrap: str, container: DockerContainer) -> None:
    """Wait until the broker answers metadata; BrokerError with its last lines if not."""
    admin = clients.admin_client(bootstrap, quiet=True)
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        try:
            if admin.list_topics(timeout=2).brokers:
                return
        except Exception as exc:  # KafkaException while the broker starts
            log.debug("broker not ready yet: %s", exc)
        time.sleep(0.2)
    stdout, stderr = _logs(container)
    raise BrokerError(f"the Kafka container did not answer within {START_TIMEOUT_S:.0f} s; "
                      f"its last lines:\n{stdout[-2000:]}{stderr[-2000:]}")  # fmt: skip


def _logs(container: Any) -> tuple[str, str]:
    out, err = container.get_logs()
    return out.decode(errors="replace"), err.decode(errors="replace")
