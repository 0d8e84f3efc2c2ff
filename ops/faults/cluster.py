"""The run's own Kafka cluster on free ports, and the faults a node can suffer.

One node for the process scenarios; three (replication 3, min.insync.replicas 2, as
``jobstream kafka up --nodes 3`` sets them) for the broker scenarios. The cluster is
ops/kafka/cluster.py's; this module adds what a fault needs: a node's pid, SIGKILL and
a restart, SIGSTOP and SIGCONT, a cut off the network and its healing, and which node
to hit.
"""

from __future__ import annotations

import logging
import shutil
from collections import Counter
from pathlib import Path

from jobstream._ops.faults.host import NetworkCut
from jobstream._ops.faults.pauses import Pauses
from jobstream._ops.kafka.cluster import Layout, LocalCluster
from jobstream._ops.kafka.ports import free_base_port
from jobstream._ops.kafka.secure import ADMIN_USER
from jobstream._pipeline.errors import BrokerError
from jobstream._pipeline.kafka import clients

log = logging.getLogger(__name__)

HEAP_MB = 512
START_TIMEOUT_S = 120.0


class FaultCluster:
    """A :class:`LocalCluster` in ``home`` that the run starts, hurts and removes."""

    def __init__(self, home: Path, nodes: int, network: NetworkCut | None = None, *,
                 secure: bool = False, heap_mb: int = HEAP_MB) -> None:  # fmt: skip
        """With ``network``, each node runs in a cgroup of its own that can be cut off;
        ``secure``: TLS, SASL/SCRAM and ACLs (ops/kafka/secure.py)."""
        self.secure = secure
        self.heap_mb = heap_mb
        self.network = network
        self.local = LocalCluster(
            home, None if network is None else lambda node: network.launcher(_member(node.node_id))
        )
        self.nodes = nodes
        self.paused: Pauses[int] = Pauses(self.pid)
        self._layout: Layout | None = None

    @property
    def layout(self) -> Layout:
        if self._layout is None:
            raise BrokerError("the cluster is not started")
        return self._layout

    def start(self) -> Layout:
        self._layout = self.local.up(nodes=self.nodes, port=free_base_port(self.nodes),
                                     heap_mb=self.heap_mb, timeout_s=START_TIMEOUT_S,
                                     secure=self.secure)  # fmt: skip
        return self._layout

    def security_settings(self) -> dict[str, str]:
        """Settings fields that log in to the cluster as its super user (none when open)."""
        if not self.secure:
            return {"security_protocol": "PLAINTEXT"}
        env = self.local.security.settings_env(ADMIN_USER)
        return {key.removeprefix("JOBSTREAM_").lower(): value for key, value in env.items()}

    def pid(self, node_id: int) -> int:
        node = next(n for n in self.layout.nodes if n.node_id == node_id)
        pid = self.local.pid(node)
        if pid is None:
            raise BrokerError(f"kafka node {node_id} is not running")
        return pid

    def kill(self, node_id: int) -> int:
        """SIGKILL one node, as a crash would; returns its pid."""
        pid = self.pid(node_id)
        self.local.stop_node(node_id, kill=True)
        return pid

    def restart(self, node_id: int) -> None:
        """Start a killed node again and wait until it is back in the metadata."""
        self.local.start_node(node_id, timeout_s=START_TIMEOUT_S)

    def pause(self, node_id: int) -> int:
        return self.paused.pause(node_id)

    def resume(self, node_id: int) -> None:
        self.paused.resume(node_id)

    def cut_off(self, node_id: int) -> None:
        """Drop every packet the node sends, to clients and to the other nodes alike."""
        if self.network is None:
            raise BrokerError("this cluster's nodes were not started to be cut off")
        self.network.cut(_member(node_id))

    def heal(self, node_id: int) -> None:
        if self.network is not None:
            self.network.heal(_member(node_id))

    def busiest_node(self) -> int:
        """The node leading the most partitions (the internal topics' included, so the
        group and transaction coordinators count): the one whose loss moves most."""
        admin = clients.admin_client(self.local.client_config(self.layout))
        leaders: Counter[int] = Counter()
        for topic in admin.list_topics(timeout=30).topics.values():
            leaders.update(p.leader for p in topic.partitions.values() if p.leader >= 0)
        return leaders.most_common(1)[0][0] if leaders else self.layout.nodes[0].node_id

    def log_path(self, node_id: int) -> Path:
        node = next(n for n in self.layout.nodes if n.node_id == node_id)
        return self.local.log_path(node)

    def stop(self) -> None:
        """Stop every node (a paused one is resumed first, or it could not stop) and
        remove their data; the logs stay."""
        self.paused.resume_all(gone=BrokerError)
        if self.network is not None:
            self.network.heal_all()
        self.local.down()
        if self.network is not None:
            self.network.close()
        if self._layout is not None:
            for node in self._layout.nodes:
                shutil.rmtree(self.local.node_dir(node) / "data", ignore_errors=True)


def _member(node_id: int) -> str:
    return f"node{node_id}"
