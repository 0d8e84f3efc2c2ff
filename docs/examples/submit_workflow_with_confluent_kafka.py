"""Submit a workflow (a DAG of jobs) with plain confluent-kafka, fastavro and the .avsc files.

No jobstream code is imported: one WorkflowSubmitted record on jobs.intake, keyed by the
workflow id (docs/submitting.md, docs/workflows.md), encoded as the single-job example
beside this one encodes a job. Prints the workflow id, then each
step's job id (derived from the workflow id and the step name, as jobstream derives it).

    python docs/examples/submit_workflow_with_confluent_kafka.py

Environment: JOBSTREAM_BOOTSTRAP_SERVERS (default 127.0.0.1:9092), JOBSTREAM_TOPIC_PREFIX
(default empty), JOBSTREAM_SCHEMAS_DIR (default: the schemas/ folder of this checkout).
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import sys
import time

from confluent_kafka import Producer
from fastavro.schema import load_schema
from submit_with_confluent_kafka import CROCKFORD, SCHEMAS, single_object


def step_job_id(owner: str, workflow_id: str, step: str) -> str:
    """W + 125 bits of blake2b-128(owner NUL workflow id NUL step name), Crockford base32."""
    text = f"{owner}\x00{workflow_id}\x00{step}"
    digest = hashlib.blake2b(text.encode(), digest_size=16).digest()
    value = int.from_bytes(digest, "big") >> 3
    return "W" + "".join(CROCKFORD[(value >> s) & 31] for s in range(120, -1, -5))


def spec(job_type: str, **params: object) -> dict:
    # Fields with a default (priority, run_at_ms, retry, on_parent_failure, ...) may be left out.
    return {"job_type": job_type, "owner": "acme", "params": json.dumps(params)}


def main() -> int:
    schema = load_schema(str(SCHEMAS / "io.jobstream.WorkflowSubmitted.avsc"))
    workflow_id = "sales-" + secrets.token_hex(4)
    record = {
        "workflow_id": workflow_id,
        "idempotency_key": None,
        "owner": "acme",  # every step's spec.owner must be it
        "submitted_at_ms": time.time_ns() // 1_000_000,
        "steps": [  # depends_on: names of other steps; spec.depends_on stays empty
            {"name": "aggregate", "depends_on": [],
             "spec": spec("data.process", input="sales.csv")},
            {"name": "chart", "depends_on": ["aggregate"], "spec": spec("image.render")},
            {"name": "report", "depends_on": ["aggregate", "chart"],
             "spec": {**spec("report.generate"), "on_parent_failure": "RUN"}},
        ],
    }
    topic = os.environ.get("JOBSTREAM_TOPIC_PREFIX", "") + "jobs.intake"
    bootstrap = os.environ.get("JOBSTREAM_BOOTSTRAP_SERVERS", "127.0.0.1:9092")
    producer = Producer({"bootstrap.servers": bootstrap, "partitioner": "murmur2_random"})
    failures: list[str] = []
    producer.produce(topic, single_object(schema, record), workflow_id.encode(),
                     on_delivery=lambda err, _msg: err and failures.append(str(err)))
    if producer.flush(30) or failures:
        print(f"not delivered: {failures or 'timed out'}", file=sys.stderr)
        return 1
    print(workflow_id)
    for step in record["steps"]:
        print(f"{step['name']}\t{step_job_id(record['owner'], workflow_id, step['name'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
