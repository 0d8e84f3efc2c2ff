"""The traffic count's pure parts: who writes and reads a topic, the kinds of its records,
the log bytes of a topic on a broker's disk; and a topic counted on the broker."""

from __future__ import annotations

from pathlib import Path

from jobstream._ops.bench.codecs import hot_events
from jobstream._ops.bench.traffic import READERS, WRITERS, count_all, kind_of, log_bytes, who
from jobstream._pipeline.config import Settings
from jobstream._pipeline.kafka import clients
from jobstream._pipeline.kafka.admin import ensure_topics
from jobstream._pipeline.serde import make_serde
from jobstream._pipeline.status.record import (
    EXECUTION_HEADER,
    INTERNAL,
    MOVED_HEADER,
    RECORD_HEADER,
)
from jobstream._pipeline.topics import TopicSpec

SERIALIZE, _ = make_serde()


def test_each_topic_finds_its_writer_and_readers_by_the_longest_prefix() -> None:
    assert who(WRITERS, "jobs.status") == "status processor"
    assert who(READERS, "jobs.status") == (
        "views (API), console consumers; status processor, on restore")
    assert who(READERS, "jobs.status.handover") == "status processor"
    assert who(READERS, "jobs.exec.image.render.high") == "workers"
    assert who(READERS, "jobs.intake.dlq") == "timers"  # a prefix of jobs.intake: say so
    assert who(READERS, "elsewhere") == "nobody in the pipeline"


def test_records_are_sorted_by_lifecycle_kind_and_changelog_write_or_delete() -> None:
    started = SERIALIZE(hot_events()["STARTED"])
    assert kind_of("p.jobs.events", b"k", started) == "STARTED"
    queued, running = b'{"state":"QUEUED"}', b'{"state":"RUNNING"}'
    assert kind_of("p.jobs.status", b"123", queued, [(RECORD_HEADER, b"{}")]) == "write QUEUED"
    assert kind_of("p.jobs.status", b"123", running,
                   [(EXECUTION_HEADER, b"{}")]) == "write RUNNING running"  # fmt: skip
    assert kind_of("p.jobs.status", b"123", b"", [(MOVED_HEADER, b"1")]) == "delete moved"
    assert kind_of("p.jobs.status", b"123", b"", None) == "delete"
    assert kind_of("p.jobs.status", b"\x00h", b"{}", INTERNAL) == "internal"
    assert kind_of("p.jobs.timers.changelog", b"\x00\x01", b"") == "delete"
    assert kind_of("p.jobs.intake", b"k", b"v") == ""


def test_log_bytes_sum_the_topics_own_segments_only(tmp_path: Path) -> None:
    data = tmp_path / "node-1" / "data"
    for folder, size in (("p.jobs.status-0", 10), ("p.jobs.status-1", 5),
                         ("p.jobs.status.changelog-0", 100)):  # fmt: skip
        (data / folder).mkdir(parents=True)
        (data / folder / "00000000000000000000.log").write_bytes(b"x" * size)
        (data / folder / "00000000000000000000.index").write_bytes(b"x" * 1000)
    assert log_bytes([data], "p.jobs.status") == 15
    assert log_bytes([data], "p.jobs.status.changelog") == 100
    assert log_bytes([data], "p.jobs.events") is None


def test_a_topic_is_counted_to_its_end_with_its_headers(settings: Settings) -> None:
    topic = f"{settings.topic_prefix}jobs.intake"
    ensure_topics(settings.kafka_config, [TopicSpec(topic, 2)])
    producer = clients.producer(settings)
    for i in range(10):
        producer.produce(topic, b"v" * i, f"k{i}".encode(), headers=[("h", b"xy"), ("n", None)])
    assert producer.flush(30) == 0

    counted = count_all(settings, [])
    assert set(counted) == {"jobs.intake"}
    traffic = counted["jobs.intake"]
    # each record: its key (2 bytes), its value (i bytes), its headers' names and values (4)
    assert (traffic.records, traffic.offsets) == (10, 10)
    assert traffic.payload_bytes == sum(2 + i + 4 for i in range(10))
