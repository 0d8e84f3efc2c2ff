"""The two profiles the manifests are rendered for: what differs between a try-out on one
node and a production cluster, and nothing else."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Resources:
    """A container's requests and limits (Kubernetes quantities)."""

    cpu: str
    memory: str
    memory_limit: str

    def spec(self) -> dict[str, dict[str, str]]:
        # No CPU limit: a throttled timer fires late; memory is limited, a leak is bounded.
        return {"requests": {"cpu": self.cpu, "memory": self.memory},
                "limits": {"memory": self.memory_limit}}  # fmt: skip


@dataclass(frozen=True)
class Profile:
    name: str
    bootstrap: str
    """The Kafka cluster's bootstrap servers, as the pods reach them."""
    replication_factor: int
    min_insync_replicas: int | None
    """Topic-level ``min.insync.replicas`` of the topics jobstream creates (None: the
    broker's default)."""
    partitions: int
    """Partitions of the timers', execution, events and status topics."""
    secure: bool
    """SASL_SSL with SCRAM-SHA-512, each process as its role's principal
    (docs/kafka-security.md)."""
    replicas: int
    """Pods of each StatefulSet and Deployment that KEDA does not scale."""
    max_workers: int
    """Most pods of one job type's workers that KEDA scales to."""
    lag_per_worker: int
    """Records waiting in a type's consumer group per worker pod, KEDA's target."""
    worker_concurrency: int
    state_storage: str
    """Size of each RocksDB volume of the timers and the status processor."""
    small: Resources
    large: Resources
    """The timers, the status processor and the workers."""
    dev_broker: bool
    """A one-node Kafka StatefulSet beside the stack (dev only; production brings its own)."""
    extra_settings: dict[str, str] = field(default_factory=dict)


DEV = Profile(
    name="dev", bootstrap="kafka:9092", replication_factor=1, min_insync_replicas=None,
    partitions=6, secure=False, replicas=1, max_workers=6, lag_per_worker=50,
    worker_concurrency=8, state_storage="1Gi",
    small=Resources("50m", "128Mi", "512Mi"), large=Resources("100m", "256Mi", "1Gi"),
    dev_broker=True,
)  # fmt: skip

PRODUCTION = Profile(
    name="production", bootstrap="kafka-bootstrap:9093", replication_factor=3,
    min_insync_replicas=2, partitions=12, secure=True, replicas=2, max_workers=12,
    lag_per_worker=100, worker_concurrency=16, state_storage="50Gi",
    small=Resources("250m", "512Mi", "1Gi"), large=Resources("1", "2Gi", "4Gi"),
    dev_broker=False,
)  # fmt: skip

PROFILES = {profile.name: profile for profile in (DEV, PRODUCTION)}
