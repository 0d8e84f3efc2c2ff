"""Every event type, produced and consumed through the real broker, decodes equal."""

from __future__ import annotations

from fastavro.utils import generate_many

from jobstream._pipeline.kafka import clients
from jobstream._pipeline.model.records import typed
from jobstream._pipeline.serde import EVENT_NAMES, Event, event_schemas, make_serde
from jobstream._pipeline.topics import Topics
from tests.support.waiting import wait_for


def test_every_event_round_trips_through_kafka(topics: Topics, unique_name: str) -> None:
    serialize, deserialize = make_serde()
    schemas = event_schemas()
    sent = [  # as the deserializer gives them back: their records typed
        Event(name, typed(name, record))
        for name in EVENT_NAMES
        for record in generate_many(schemas.current(name).parsed, 5)
    ]
    producer = clients.producer(topics.settings)
    for i, event in enumerate(sent):
        producer.produce(
            topics.events,
            key=str(i).encode(),
            value=serialize(event),
            partition=i % topics.settings.events_partitions,
        )
    assert producer.flush(30) == 0

    consumer = clients.consumer(topics.settings, unique_name)
    consumer.subscribe([topics.events])
    received: dict[int, Event] = {}

    def all_received() -> bool:
        for message in consumer.consume(500, timeout=0.5):
            assert message.error() is None, message.error()
            received[int(message.key())] = deserialize(message.value())
        return len(received) == len(sent)

    wait_for(all_received, timeout_s=60, what="every event back from the broker")
    consumer.close()
    assert [received[i] for i in range(len(sent))] == sent
