"""Submit a job to jobstream with plain confluent-kafka, fastavro and the .avsc files.

No jobstream code is imported: this is what any Kafka client has to do (docs/submitting.md).

    python docs/examples/submit_with_confluent_kafka.py             # produce; print the job id
    python docs/examples/submit_with_confluent_kafka.py --out job.bin
        # write the encoded value to job.bin and print its key, for kcat

Environment: JOBSTREAM_BOOTSTRAP_SERVERS (default 127.0.0.1:9092), JOBSTREAM_TOPIC_PREFIX
(default empty), JOBSTREAM_SCHEMAS_DIR (default: the schemas/ folder of this checkout).
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import secrets
import sys
import time
from pathlib import Path

from confluent_kafka import Producer
from fastavro import schemaless_writer
from fastavro.schema import fingerprint, load_schema, to_parsing_canonical_form

CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
SCHEMAS = Path(os.environ.get("JOBSTREAM_SCHEMAS_DIR", Path(__file__).parents[2] / "schemas"))


def new_job_id() -> str:
    """A ULID: 48-bit epoch ms then 80 random bits, as 26 Crockford base32 characters."""
    value = (time.time_ns() // 1_000_000) << 80 | secrets.randbits(80)
    return "".join(CROCKFORD[(value >> shift) & 31] for shift in range(125, -1, -5))


def idempotent_job_id(owner: str, key: str) -> str:
    """The job id jobstream requires with an idempotency key: K + 125 bits of a hash."""
    digest = hashlib.blake2b(f"{owner}\x00{key}".encode(), digest_size=16).digest()
    value = int.from_bytes(digest, "big") >> 3  # the top 125 of the 128 bits
    return "K" + "".join(CROCKFORD[(value >> shift) & 31] for shift in range(120, -1, -5))


def single_object(schema: dict, record: dict) -> bytes:
    """Avro single-object encoding: C3 01, CRC-64-AVRO of the schema (little-endian), body."""
    # fastavro gives the fingerprint's 8 bytes as hex, already in little-endian order.
    fp = bytes.fromhex(fingerprint(to_parsing_canonical_form(schema), "CRC-64-AVRO"))
    body = io.BytesIO()
    schemaless_writer(body, schema, record)
    return b"\xc3\x01" + fp + body.getvalue()


def submission(
    job_type: str,
    owner: str,
    params: dict,
    *,
    run_at_ms: int | None = None,
    idempotency_key: str | None = None,
    workflow_id: str | None = None,
) -> dict:
    """A JobSubmitted record. Fields with a default (cron, retry, ...) may be left out."""
    now_ms = time.time_ns() // 1_000_000
    return {
        "job_id": idempotent_job_id(owner, idempotency_key) if idempotency_key else new_job_id(),
        "idempotency_key": idempotency_key,
        "workflow_id": workflow_id,
        "submitted_at_ms": now_ms,
        "spec": {
            "job_type": job_type,
            "owner": owner,
            "params": json.dumps(params, separators=(",", ":")),  # JSON object text, <= 1 MB
            "priority": "HIGH",
            "run_at_ms": run_at_ms,  # None: run now
            "labels": {"source": "confluent-kafka example"},
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="write the encoded value here instead of producing it")
    args = parser.parse_args()

    schema = load_schema(str(SCHEMAS / "io.jobstream.JobSubmitted.avsc"))  # resolves JobSpec etc.
    record = submission(
        "report.generate",
        "acme",
        {"report": "sales", "month": "2026-11"},
        run_at_ms=time.time_ns() // 1_000_000 + 60_000,
    )
    value = single_object(schema, record)
    key = record["workflow_id"] or record["job_id"]  # the partition key
    if args.out:
        Path(args.out).write_bytes(value)
        print(key)
        return

    producer = Producer(
        {
            "bootstrap.servers": os.environ.get("JOBSTREAM_BOOTSTRAP_SERVERS", "127.0.0.1:9092"),
            "partitioner": "murmur2_random",  # Kafka's Java hash, which jobstream uses
            "enable.idempotence": True,
        }
    )
    errors = []
    topic = os.environ.get("JOBSTREAM_TOPIC_PREFIX", "") + "jobs.intake"
    producer.produce(topic, value, key.encode(), on_delivery=lambda err, _msg: errors.append(err))
    producer.flush(30)
    if errors != [None]:
        sys.exit(f"not delivered to {topic}: {errors or 'timed out'}")
    print(record["job_id"])


if __name__ == "__main__":
    main()
