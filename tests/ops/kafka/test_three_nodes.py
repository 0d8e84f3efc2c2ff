"""The 3-node cluster forms, and a replicated topic stays writable with one node down."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from jobstream._ops.kafka.cluster import Layout, LocalCluster
from jobstream._ops.kafka.ports import free_base_port
from tests.support.tools import unavailable
from tests.support.waiting import wait_for

pytestmark = pytest.mark.cluster


@pytest.fixture(scope="module")
def three_nodes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LocalCluster, Layout]]:
    cluster = LocalCluster(tmp_path_factory.mktemp("kafka3"))
    try:
        layout = cluster.up(nodes=3, port=free_base_port(3), heap_mb=384, timeout_s=120)
    except Exception as exc:
        cluster.down()
        unavailable(f"3-node cluster could not start: {exc}")
    yield cluster, layout
    cluster.down()


def produce(bootstrap: str, topic: str, values: list[bytes]) -> None:
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "enable.idempotence": True,
            "message.timeout.ms": 60000,
        }
    )
    failures: list[str] = []
    for value in values:
        producer.produce(
            topic, value, on_delivery=lambda err, _m: err and failures.append(str(err))
        )
    assert producer.flush(90) == 0
    assert failures == []


def test_replicated_topic_survives_one_node_down(three_nodes: tuple[LocalCluster, Layout]) -> None:
    cluster, layout = three_nodes
    admin = AdminClient({"bootstrap.servers": layout.bootstrap})
    assert sorted(admin.list_topics(timeout=10).brokers) == [1, 2, 3]

    admin.create_topics([NewTopic("replicated", 3, 3, config={"min.insync.replicas": "2"})])[
        "replicated"
    ].result()
    produce(layout.bootstrap, "replicated", [f"before-{i}".encode() for i in range(100)])

    assert cluster.stop_node(3, kill=True)
    survivors = ",".join(f"127.0.0.1:{n.port}" for n in layout.nodes if n.node_id != 3)
    produce(survivors, "replicated", [f"after-{i}".encode() for i in range(100)])

    consumer = Consumer(
        {
            "bootstrap.servers": survivors,
            "group.id": "check",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe(["replicated"])
    seen: set[bytes] = set()
    for _ in range(600):
        for message in consumer.consume(500, timeout=0.2):
            if message.error() is None:
                seen.add(message.value())
        if len(seen) == 200:
            break
    consumer.close()
    assert len(seen) == 200

    cluster.start_node(3)
    # The node answers on its port before the controller has it registered again.
    wait_for(lambda: sorted(admin.list_topics(timeout=10).brokers) == [1, 2, 3],
             timeout_s=60, interval_s=0.5, what="node 3 back in the cluster's metadata")
