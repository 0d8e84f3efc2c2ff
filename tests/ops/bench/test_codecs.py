"""The codec micro-benchmark times what the engine writes: the records of one job, and
every way of encoding one gives the bytes the engine's serde gives."""

from __future__ import annotations

from jobstream._ops.bench.codecs import hot_events, per_record_us, ways
from jobstream._pipeline.model.records import plain
from jobstream._pipeline.serde import make_serde
from jobstream._pipeline.serde.avro import SINGLE_OBJECT_HEADER_SIZE

SERIALIZE, DESERIALIZE = make_serde()


def test_the_records_of_one_job_as_the_engine_builds_them() -> None:
    events = hot_events()
    assert list(events) == ["JobSubmitted", "SCHEDULED", "ExecutionRequested", "FIRED",
                            "STARTED", "SUCCEEDED"]  # fmt: skip
    job_id = events["JobSubmitted"].data["job_id"]
    assert all(event.data["job_id"] == job_id for event in events.values())
    assert events["STARTED"].data["execution"] == events["ExecutionRequested"].data


def test_every_way_writes_and_reads_what_the_serde_does() -> None:
    for label, event in hot_events().items():
        body = SERIALIZE(event)[SINGLE_OBJECT_HEADER_SIZE:]
        for name, (encode, decode) in ways(event).items():
            written = encode()
            if isinstance(written, bytes) and name != "serde":
                assert written == body, (label, name)
            read = decode()
            if read is not None and name != "serde":
                assert read == plain(DESERIALIZE(SERIALIZE(event)).data), (label, name)
    assert per_record_us(lambda: None, number=10, repeat=2) >= 0
