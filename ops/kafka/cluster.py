"""A local Apache Kafka cluster in KRaft mode: one combined broker+controller per node.

A cluster lives in one home folder: ``cluster.json`` (its layout), and per node
``node-<id>/{server.properties, data/, logs/, pid}``. Every node is a voter of a static
quorum, so one node and three nodes start the same way. Processes run in their own
session and outlive the command that started them; ``stop`` ends them.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from jobstream._ops.kafka import jars
from jobstream._ops.kafka.secure import ADMIN_USER, Security
from jobstream._pipeline.errors import BrokerError
from jobstream._pipeline.kafka import clients

log = logging.getLogger(__name__)

JVM_FLAGS = ["-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20", "-Djava.awt.headless=true"]
EXTRA_JVM_FLAGS_ENV = "JOBSTREAM_KAFKA_JVM_FLAGS"
"""More flags for every node's JVM, after :data:`JVM_FLAGS` (a later flag wins), split on
spaces: how docs/kafka-tuning.md measured the alternatives."""


EXTRA_PROPERTIES_ENV = "JOBSTREAM_KAFKA_PROPERTIES"
"""More server properties for every node, after the ones :func:`server_properties` sets
(a later one wins), as ``key=value`` pairs split on spaces: how docs/kafka-tuning.md
measured the broker's thread counts."""


def jvm_flags() -> list[str]:
    return [*JVM_FLAGS, *os.environ.get(EXTRA_JVM_FLAGS_ENV, "").split()]


def extra_properties() -> dict[str, str]:
    """The pairs of :data:`EXTRA_PROPERTIES_ENV`; one without ``=`` or a key stops the start."""
    pairs = {}
    for pair in os.environ.get(EXTRA_PROPERTIES_ENV, "").split():
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise BrokerError(f"{EXTRA_PROPERTIES_ENV}: {pair!r} is not key=value")
        pairs[key] = value
    return pairs


@dataclass(frozen=True)
class Node:
    node_id: int
    port: int
    controller_port: int


@dataclass(frozen=True)
class Layout:
    cluster_id: str
    nodes: tuple[Node, ...]
    heap_mb: int
    secure: bool = False
    """TLS, SASL/SCRAM and an authorizer (ops/kafka/secure.py) instead of PLAINTEXT."""

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{node.port}" for node in self.nodes)

    @property
    def replication(self) -> int:
        return min(3, len(self.nodes))

    @classmethod
    def plan(cls, *, nodes: int, port: int, heap_mb: int, secure: bool = False) -> Layout:
        """Broker ports port..port+n-1, controller ports port+100..port+100+n-1."""
        return cls(
            cluster_id=_new_cluster_id(),
            nodes=tuple(Node(i + 1, port + i, port + 100 + i) for i in range(nodes)),
            heap_mb=heap_mb,
            secure=secure,
        )

    @classmethod
    def load(cls, path: Path) -> Layout:
        raw = json.loads(path.read_text())
        return cls(raw["cluster_id"], tuple(Node(**n) for n in raw["nodes"]), raw["heap_mb"],
                   raw.get("secure", False))  # fmt: skip

    def save(self, path: Path) -> None:
        path.write_text(json.dumps(asdict(self), indent=2))


def _new_cluster_id() -> str:
    """Kafka's Uuid text form: 16 random bytes, URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()


def server_properties(layout: Layout, node: Node, node_dir: Path,
                      security: Security | None = None) -> str:  # fmt: skip
    """A node's server.properties; ``security`` secures its listeners (Layout.secure)."""
    voters = ",".join(f"{n.node_id}@127.0.0.1:{n.controller_port}" for n in layout.nodes)
    rf = layout.replication
    min_isr = 2 if rf >= 3 else 1
    settings = {
        "process.roles": "broker,controller",
        "node.id": node.node_id,
        "controller.quorum.voters": voters,
        "listeners": f"PLAINTEXT://127.0.0.1:{node.port},CONTROLLER://127.0.0.1:{node.controller_port}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{node.port}",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "log.dirs": node_dir / "data",
        "num.partitions": 1,
        "default.replication.factor": rf,
        "min.insync.replicas": min_isr,
        "offsets.topic.replication.factor": rf,
        "offsets.topic.num.partitions": 10,
        "transaction.state.log.replication.factor": rf,
        "transaction.state.log.min.isr": min_isr,
        "transaction.state.log.num.partitions": 10,
        "share.coordinator.state.topic.replication.factor": rf,
        "share.coordinator.state.topic.min.isr": min_isr,
        "group.initial.rebalance.delay.ms": 0,
        "message.max.bytes": 4 * 1024 * 1024,
        "log.segment.bytes": 64 * 1024 * 1024,
        "log.cleaner.dedupe.buffer.size": 16 * 1024 * 1024,
        "auto.create.topics.enable": "false",
    }
    if security is not None:
        settings.update(security.server_properties(node.port, node.controller_port))
    settings.update(extra_properties())
    return "".join(f"{key}={value}\n" for key, value in settings.items())


class LocalCluster:
    """Start, stop and inspect a local cluster kept in ``home``."""

    def __init__(self, home: Path, launcher: Callable[[Node], Sequence[str]] | None = None) -> None:
        """``launcher`` gives what a node's command starts with (fault runs start each
        node in a cgroup of its own)."""
        self.home = Path(home).resolve()
        self.layout_file = self.home / "cluster.json"
        self.launcher = launcher

    def node_dir(self, node: Node) -> Path:
        return self.home / f"node-{node.node_id}"

    def log_path(self, node: Node) -> Path:
        return self.node_dir(node) / "logs" / "server.log"

    @property
    def security(self) -> Security:
        """The secrets of the cluster when it is secured (Layout.secure)."""
        return Security(self.home / "security")

    def client_config(self, layout: Layout, user: str = ADMIN_USER) -> dict[str, Any]:
        """librdkafka settings that reach ``layout``'s brokers, as ``user`` when secured."""
        config: dict[str, Any] = {"bootstrap.servers": layout.bootstrap}
        if layout.secure:
            config.update(self.security.client_config(user))
        return config

    def layout(self) -> Layout | None:
        return Layout.load(self.layout_file) if self.layout_file.exists() else None

    # -- lifecycle ---------------------------------------------------------------------

    def up(
        self, *, nodes: int = 1, port: int = 9092, heap_mb: int = 512, timeout_s: float = 90.0,
        secure: bool = False,
    ) -> Layout:
        """Start the cluster (idempotent) and wait until every node answers metadata.

        ``secure`` asks for TLS, SASL/SCRAM and an authorizer (ops/kafka/secure.py); a
        cluster kept in the home folder is planned anew when it differs, as for ``nodes``."""
        layout = self.layout()
        if layout is not None and len(layout.nodes) != nodes and self.running_nodes(layout):
            raise BrokerError(
                f"a {len(layout.nodes)}-node cluster is already running in {self.home}; "
                "run `jobstream kafka down` first"
            )
        if layout is not None and layout.secure != secure:
            # Its data holds the other kind's metadata (no SCRAM users, or ACLs that an
            # open broker would ignore): a cluster never changes kind in place.
            raise BrokerError(
                f"the cluster in {self.home} is {'secured' if layout.secure else 'open'}; "
                f"start it {'with' if layout.secure else 'without'} --secure, or use another "
                "--home"
            )
        if layout is None or len(layout.nodes) != nodes or layout.nodes[0].port != port:
            layout = Layout.plan(nodes=nodes, port=port, heap_mb=heap_mb, secure=secure)
            self.home.mkdir(parents=True, exist_ok=True)
            layout.save(self.layout_file)
        for node in layout.nodes:
            if self.pid(node) is None:
                self._start_node(layout, node)
        self.wait_ready(layout, timeout_s=timeout_s)
        return layout

    def start_node(self, node_id: int, *, timeout_s: float = 90.0) -> None:
        """Start one stopped node of an existing cluster (fault tests)."""
        layout = self._require_layout()
        node = next(n for n in layout.nodes if n.node_id == node_id)
        if self.pid(node) is None:
            self._start_node(layout, node)
        self.wait_ready(layout, timeout_s=timeout_s, brokers=self.running_nodes(layout))

    def _start_node(self, layout: Layout, node: Node) -> None:
        for port in (node.port, node.controller_port):
            _check_port_free(port)
        node_dir = self.node_dir(node)
        (node_dir / "logs").mkdir(parents=True, exist_ok=True)
        properties = node_dir / "server.properties"
        security = self.security if layout.secure else None
        properties.write_text(server_properties(layout, node, node_dir, security))
        logs = node_dir / "logs"
        if not (node_dir / "data" / "meta.properties").exists():
            format_command = jars.java_command(
                "kafka.tools.StorageTool",
                # "=": an id may begin with "-", which would read as an option
                "format", f"--cluster-id={layout.cluster_id}", "-c", str(properties),
                "--ignore-formatted", *(security.format_arguments() if security else ()),
                logs=logs,
            )  # fmt: skip
            result = subprocess.run(format_command, capture_output=True, text=True)
            if result.returncode != 0:
                raise BrokerError(
                    f"formatting node {node.node_id} failed:\n{result.stdout}{result.stderr}"
                )
        prefix = self.launcher(node) if self.launcher else ()
        command = [*prefix, *jars.java_command(
            "kafka.Kafka", str(properties), logs=logs, heap_mb=layout.heap_mb,
            jvm_flags=[f"-Xms{layout.heap_mb}m", *jvm_flags()])]  # fmt: skip
        with open(node_dir / "logs" / "stdout.log", "ab") as out:
            process = subprocess.Popen(
                command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True,
            )  # fmt: skip
        (node_dir / "pid").write_text(str(process.pid))
        log.info("started kafka node %d pid=%d port=%d", node.node_id, process.pid, node.port)

    def wait_ready(
        self, layout: Layout, *, timeout_s: float, brokers: list[Node] | None = None
    ) -> None:
        """Wait until the given nodes (default: all) are in the cluster's metadata."""
        expected = {n.node_id for n in (brokers or layout.nodes)}
        deadline = time.monotonic() + timeout_s
        # librdkafka's connection-refused lines while the broker starts are noise: log level 0.
        admin = clients.admin_client(self.client_config(layout), quiet=True)
        seen: set[int] = set()
        while time.monotonic() < deadline:
            for node in layout.nodes:
                if node.node_id in expected and self.pid(node) is None:
                    raise BrokerError(
                        f"kafka node {node.node_id} exited during start-up; last log lines of "
                        f"{self.log_path(node)}:\n{self.log_tail(node)}"
                    )
            try:
                metadata = admin.list_topics(timeout=2)
                seen = set(metadata.brokers)
                if expected <= seen:
                    return
            except Exception as exc:  # KafkaException while the quorum forms
                log.debug("broker not ready yet: %s", exc)
            time.sleep(0.2)
        raise BrokerError(
            f"kafka did not answer within {timeout_s:.0f}s (brokers seen: {sorted(seen)}); "
            f"last log lines of {self.log_path(layout.nodes[0])}:\n"
            f"{self.log_tail(layout.nodes[0])}"
        )

    def down(self, *, timeout_s: float = 30.0) -> list[int]:
        """Stop every node; return the node ids that were running."""
        layout = self.layout()
        if layout is None:
            return []
        return self.stop_nodes([n.node_id for n in layout.nodes], timeout_s=timeout_s)

    def stop_node(self, node_id: int, *, timeout_s: float = 30.0, kill: bool = False) -> bool:
        return bool(self.stop_nodes([node_id], timeout_s=timeout_s, kill=kill))

    def stop_nodes(
        self, node_ids: list[int], *, timeout_s: float = 30.0, kill: bool = False
    ) -> list[int]:
        """Signal the nodes together, then wait; SIGKILL what is left after ``timeout_s``.

        Together, because a node shutting down cleanly waits for the quorum, and the
        quorum goes away when its peers are stopped one after the other.
        """
        nodes = [n for n in self._require_layout().nodes if n.node_id in node_ids]
        pids = {node: pid for node in nodes if (pid := self.pid(node)) is not None}
        for pid in pids.values():
            os.kill(pid, signal.SIGKILL if kill else signal.SIGTERM)
        deadline = time.monotonic() + timeout_s
        while any(_alive(pid) for pid in pids.values()) and time.monotonic() < deadline:
            time.sleep(0.1)
        for node, pid in pids.items():
            if _alive(pid):
                log.warning(
                    "kafka node %d did not stop in %.0fs; killing it", node.node_id, timeout_s
                )
                os.kill(pid, signal.SIGKILL)
                while _alive(pid):
                    time.sleep(0.05)
            (self.node_dir(node) / "pid").unlink(missing_ok=True)
        return sorted(node.node_id for node in pids)

    # -- inspection --------------------------------------------------------------------

    def pid(self, node: Node) -> int | None:
        """The node's pid when its process is alive, else None."""
        pid_file = self.node_dir(node) / "pid"
        if not pid_file.exists():
            return None
        pid = int(pid_file.read_text())
        return pid if _alive(pid) else None

    def running_nodes(self, layout: Layout) -> list[Node]:
        return [node for node in layout.nodes if self.pid(node) is not None]

    def log_tail(self, node: Node, lines: int = 25) -> str:
        texts = []
        for path in (self.node_dir(node) / "logs" / "stdout.log", self.log_path(node)):
            if path.exists():
                texts.extend(path.read_text(errors="replace").splitlines()[-lines:])
        return "\n".join(texts[-lines:]) or "(no log output)"

    def _require_layout(self) -> Layout:
        layout = self.layout()
        if layout is None:
            raise BrokerError(f"no cluster in {self.home}; run `jobstream kafka up` first")
        return layout


def _alive(pid: int) -> bool:
    try:
        waited, _ = os.waitpid(pid, os.WNOHANG)
        if waited == pid:
            return False
    except ChildProcessError:
        pass  # not our child: fall through to the signal probe
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split(") ")[-1].startswith("Z"))


def _check_port_free(port: int) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError as exc:
            raise BrokerError(
                f"port {port} on 127.0.0.1 is in use ({exc.strerror}); stop what holds it "
                "or choose another with --port"
            ) from None
