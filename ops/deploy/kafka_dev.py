"""The dev profile's broker: one Apache Kafka node in KRaft mode, configured as
docker-compose.yml's ``kafka`` service, so that the dev manifests run on a one-node
cluster (kind, minikube) with nothing else. Production brings its own cluster."""

from __future__ import annotations

from typing import Any

from jobstream._pipeline.config import MAX_MESSAGE_BYTES

IMAGE = "apache/kafka:4.3.1"
NAME = "kafka"
LABELS = {"app.kubernetes.io/name": NAME, "app.kubernetes.io/part-of": "jobstream"}


def _environment() -> dict[str, str]:
    # The pod's own name answers on the headless Service: kafka-0.kafka; the Service's
    # name (kafka:9092) is what the processes bootstrap from.
    return {
        "KAFKA_NODE_ID": "1",
        "KAFKA_PROCESS_ROLES": "broker,controller",
        "KAFKA_LISTENERS": "PLAINTEXT://:9092,CONTROLLER://:9093",
        "KAFKA_ADVERTISED_LISTENERS": f"PLAINTEXT://{NAME}:9092",
        "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "KAFKA_CONTROLLER_LISTENER_NAMES": "CONTROLLER",
        "KAFKA_INTER_BROKER_LISTENER_NAME": "PLAINTEXT",
        "KAFKA_CONTROLLER_QUORUM_VOTERS": "1@localhost:9093",
        "KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR": "1",
        "KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR": "1",
        "KAFKA_TRANSACTION_STATE_LOG_MIN_ISR": "1",
        "KAFKA_SHARE_COORDINATOR_STATE_TOPIC_REPLICATION_FACTOR": "1",
        "KAFKA_SHARE_COORDINATOR_STATE_TOPIC_MIN_ISR": "1",
        "KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS": "0",
        "KAFKA_MESSAGE_MAX_BYTES": str(2 * MAX_MESSAGE_BYTES),
        "KAFKA_AUTO_CREATE_TOPICS_ENABLE": "false",
        "KAFKA_LOG_DIRS": "/var/lib/kafka/data",
    }


def objects() -> list[dict[str, Any]]:
    probe = {"tcpSocket": {"port": 9092}, "periodSeconds": 5, "failureThreshold": 24}
    pod = {
        "metadata": {"labels": LABELS},
        "spec": {"containers": [{
            "name": NAME, "image": IMAGE,
            "env": [{"name": k, "value": v} for k, v in _environment().items()],
            "ports": [{"name": "kafka", "containerPort": 9092}],
            "readinessProbe": probe,
            "resources": {"requests": {"cpu": "250m", "memory": "768Mi"},
                          "limits": {"memory": "1Gi"}},
            "volumeMounts": [{"name": "data", "mountPath": "/var/lib/kafka/data"}],
        }]},
    }  # fmt: skip
    claim = {"metadata": {"name": "data"},
             "spec": {"accessModes": ["ReadWriteOnce"],
                      "resources": {"requests": {"storage": "2Gi"}}}}  # fmt: skip
    return [
        {"apiVersion": "apps/v1", "kind": "StatefulSet",
         "metadata": {"name": NAME, "labels": LABELS},
         "spec": {"serviceName": NAME, "replicas": 1, "selector": {"matchLabels": LABELS},
                  "template": pod, "volumeClaimTemplates": [claim]}},
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": NAME, "labels": LABELS},
         "spec": {"clusterIP": "None", "selector": LABELS,
                  "ports": [{"name": "kafka", "port": 9092, "targetPort": "kafka"}]}},
    ]  # fmt: skip
