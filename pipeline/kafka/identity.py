"""Which cluster and which topic a topic's name stands for now.

A name outlives its topic: a changelog deleted and made again, a broker whose data was
wiped, a state directory carried to another cluster all keep the name and start the
offsets over. Kafka tells them apart by ids: the cluster's, made when its storage was
formatted, and the topic's, made each time a topic of that name is created.
"""

from __future__ import annotations

import concurrent.futures
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass

from confluent_kafka import KafkaException, TopicCollection

from jobstream._pipeline.kafka import clients
from jobstream._pipeline.kafka.watermarks import NOT_READY

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TopicIdentity:
    cluster_id: str
    """The id of the cluster the topic lives on."""
    topic_id: str
    """The topic's id (a UUID in Kafka's base64 form), new with each creation of the name."""

    def encode(self) -> bytes:
        return f"{self.cluster_id}/{self.topic_id}".encode()

    @classmethod
    def decode(cls, raw: bytes) -> TopicIdentity:
        cluster_id, _, topic_id = raw.decode().partition("/")
        return cls(cluster_id=cluster_id, topic_id=topic_id)


def topic_identity(kafka_config: Mapping[str, str | int], topic: str,
                   timeout_s: float = 10.0) -> TopicIdentity | None:  # fmt: skip
    """``topic``'s identity, or None when the cluster does not tell it within ``timeout_s``.

    None is not an error: whoever asks then goes by names and offsets alone, as before
    identities were recorded. A topic not known yet (just created, its metadata still on
    its way) is asked again until the time is up.
    """
    admin = clients.admin_client(kafka_config)
    deadline = time.monotonic() + timeout_s
    while True:
        left = max(deadline - time.monotonic(), 0.1)
        try:
            cluster = admin.describe_cluster(request_timeout=left)
            described = admin.describe_topics(TopicCollection([topic]), request_timeout=left)
            cluster_id = cluster.result(timeout=left).cluster_id
            topic_id = described[topic].result(timeout=left).topic_id
            return TopicIdentity(cluster_id=str(cluster_id), topic_id=str(topic_id))
        except KafkaException as exc:
            error = exc.args[0]
            if time.monotonic() > deadline or error.code() not in NOT_READY:
                log.warning("the identity of %s is not known (%s): going by its name",
                            topic, error)  # fmt: skip
                return None
            time.sleep(0.2)
        except concurrent.futures.TimeoutError:
            log.warning("the identity of %s is not known (no answer in %.0f s): going by its "
                        "name", topic, timeout_s)  # fmt: skip
            return None
