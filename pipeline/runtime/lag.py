"""Consumer lag per group and topic, for ``jobstream_consumer_lag``.

The lag of a partition is its high watermark minus the consumer's position. The high
watermark is the one the consumer's own fetches brought (``cached=True``): no request to
the broker, so the loop never waits on it; an idle partition's is as fresh as its last
fetch. A partition not read yet (no position) counts nothing.
"""

from __future__ import annotations

from collections.abc import Callable

from confluent_kafka import Consumer, KafkaException

from jobstream._pipeline import metrics


class ConsumerLag:
    """Sets the gauge of ``group``'s topics; the loop's health calls it now and then."""

    def __init__(self, consumer: Callable[[], Consumer], group: str) -> None:
        self.consumer = consumer
        """A getter: the worker replaces its consumer when it rejoins."""
        self.group = group
        self._topics: set[str] = set()

    def __call__(self) -> None:
        consumer = self.consumer()
        try:
            positions = consumer.position(consumer.assignment())
        except (KafkaException, RuntimeError):  # closed, or between assignments
            return
        lag: dict[str, int] = dict.fromkeys(self._topics, 0)
        for tp in positions:
            lag.setdefault(tp.topic, 0)
            if tp.offset < 0:
                continue
            try:
                _, high = consumer.get_watermark_offsets(tp, cached=True)
            except KafkaException:
                continue
            if high >= 0:
                lag[tp.topic] += max(0, high - tp.offset)
        for topic, records in lag.items():
            metrics.CONSUMER_LAG.labels(self.group, topic).set(records)
        self._topics = set(lag)
