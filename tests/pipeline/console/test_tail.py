"""``jobstream tail`` on the real broker: Avro events, JSON statuses, tombstones and bytes
that are neither, each as one JSON line."""

from __future__ import annotations

import base64
import io
import subprocess
import sys

import orjson

from jobstream._pipeline.config import Settings
from jobstream._pipeline.console.tail import tail_topic, topic_name
from jobstream._pipeline.kafka import clients
from jobstream._pipeline.serde import JobStatus, encode_status
from jobstream._pipeline.topics import Topics
from tests.support.jobs import submitted
from tests.support.pipeline import SERIALIZE, process_env


def lines(raw: bytes) -> list[dict]:
    return [orjson.loads(line) for line in raw.splitlines()]


def test_every_kind_of_value_reads_as_json(settings: Settings, topics: Topics) -> None:
    job = submitted(now_ms=1_798_000_000_000, params={"n": 1})
    status = JobStatus(job_id="01JD3W6Q8Z5X7M2K4N9P0R1S2T", job_type="data.process",
                       owner="acme", state="SCHEDULED", updated_at_ms=1)  # fmt: skip
    producer = clients.producer(settings)
    producer.produce(topics.intake, SERIALIZE(job), b"k1", partition=0)
    producer.produce(topics.status, encode_status(status), status.job_id.encode(), partition=1)
    producer.produce(topics.status, None, status.job_id.encode(), partition=1)
    producer.produce(topics.intake_dlq, b"\xc3\x01garbage", b"\xff\x00",
                     headers=[("jobstream.error", b"not Avro")])  # fmt: skip
    assert producer.flush(30) == 0

    out = io.BytesIO()
    assert tail_topic(settings, topics.intake, out, from_beginning=True, to_end=True) == 1
    (intake,) = lines(out.getvalue())
    assert (intake["event"], intake["key"], intake["partition"]) == ("JobSubmitted", "k1", 0)
    assert intake["value"]["spec"]["params"] == '{"n":1}'
    assert intake["value"] == {"submitted_by": None, **job.data}  # the schema's default

    out = io.BytesIO()
    tail_topic(settings, topic_name(settings, "jobs.status"), out, from_beginning=True,
               to_end=True)  # fmt: skip
    written, tombstone = lines(out.getvalue())
    assert "event" not in written and JobStatus.model_validate(written["value"]) == status
    assert tombstone["value"] is None and tombstone["key"] == status.job_id

    out = io.BytesIO()
    tail_topic(settings, topics.intake_dlq, out, from_beginning=True, to_end=True)
    (dead,) = lines(out.getvalue())
    assert dead["value"] is None and "error" in dead
    assert base64.b64decode(dead["raw"]["base64"]) == b"\xc3\x01garbage"
    assert dead["key"] == "base64:" + base64.b64encode(b"\xff\x00").decode()
    assert dead["headers"] == {"jobstream.error": "not Avro"}


def test_the_command_stops_at_its_limit(settings: Settings, topics: Topics) -> None:
    producer = clients.producer(settings)
    for i in range(5):
        job = submitted(now_ms=1_798_000_000_000 + i)
        producer.produce(topics.intake, SERIALIZE(job), job.data["job_id"].encode(), partition=0)
    assert producer.flush(30) == 0
    done = subprocess.run(
        [sys.executable, "-m", "jobstream._pipeline", "tail", "jobs.intake", "--from-beginning",
         "--limit", "3"],
        env=process_env(settings), capture_output=True, timeout=120, check=True,
    )  # fmt: skip
    found = lines(done.stdout)
    assert [line["offset"] for line in found] == [0, 1, 2]
    assert {line["event"] for line in found} == {"JobSubmitted"}


def test_an_unknown_topic_is_an_error(settings: Settings, topics: Topics) -> None:
    done = subprocess.run([sys.executable, "-m", "jobstream._pipeline", "tail", "jobs.nothing"],
                          env=process_env(settings), capture_output=True, timeout=120)  # fmt: skip
    assert done.returncode == 3, done.stderr
    assert b"no topic" in done.stderr
