"""The changelog records of a transaction, headers and all, as the producer takes them
(a real producer, its records queued locally: no broker needed to refuse a bad call, e.g.
headers as a tuple, which confluent-kafka refuses with a TypeError)."""

from __future__ import annotations

from confluent_kafka import Consumer, Producer

from jobstream._pipeline.state.partitions import PartitionStores

NOWHERE = {"bootstrap.servers": "127.0.0.1:9", "message.timeout.ms": 1000}


def test_records_with_and_without_headers_are_produced(tmp_path: object) -> None:
    producer = Producer(NOWHERE)
    stores = PartitionStores(tmp_path, "p.jobs.status",  # type: ignore[arg-type]
                             lambda: Consumer({**NOWHERE, "group.id": "g"}),
                             lambda tx, key, value, headers: None,
                             identify=lambda topic: None)  # fmt: skip
    try:
        stores.log(producer, 0, [
            (b"timer", b"v"),  # the timers' kind: no headers
            (b"job", None, ()),  # a purge's tombstone: none either
            (b"moved", None, (("jobstream.moved", b"1"),)),  # a tuple, as the state keeps it
            (b"job2", b"{}", [("jobstream.record", b"{}")]),
        ])  # fmt: skip  # queued: a header the client refuses raises here, at produce()
    finally:
        stores.restorer.close()
        producer.purge()
        producer.flush(0)
