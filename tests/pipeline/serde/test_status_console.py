"""docs/status.md's console recipes for jobs.status, run as written: the kcat (and jq)
commands against the real broker, and the ksqlDB table checked against JobStatus."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from jobstream._pipeline.growth.layout import LAYOUT_KEY, fresh
from jobstream._pipeline.kafka import clients
from jobstream._pipeline.serde import JobStatus, encode_status
from jobstream._pipeline.status.record import INTERNAL, MOVED, internal_key
from jobstream._pipeline.topics import Topics
from tests.support.tools import unavailable

DOC = Path(__file__).resolve().parents[3] / "docs" / "status.md"
DOC_BOOTSTRAP, DOC_TOPIC = "127.0.0.1:9092", "jobs.status"
A, B, C = "01JD3W6Q8Z5X7M2K4N9P0R1S2A", "01JD3W6Q8Z5X7M2K4N9P0R1S2B", "01JD3W6Q8Z5X7M2K4N9P0R1S2C"


def doc_commands() -> list[str]:
    """The kcat command lines of the doc that end on their own (``-e``)."""
    text = DOC.read_text()
    found = [line for line in text.splitlines() if line.startswith(f"kcat -b {DOC_BOOTSTRAP} ")]
    return [line for line in found if " -e " in line]


def require(tool: str) -> None:
    if shutil.which(tool) is None:
        unavailable(f"{tool} is not installed (Debian package {tool}; .ci/run installs it)")


def status(job_id: str, state: str, at: int, **fields: object) -> JobStatus:
    return JobStatus(job_id=job_id, job_type="data.process", owner="billing", state=state,
                     updated_at_ms=at, **fields)  # type: ignore[arg-type]  # fmt: skip


def run(command: str, bootstrap: str, topic: str) -> str:
    line = command.replace(f"-b {DOC_BOOTSTRAP}", f"-b {bootstrap}")
    line = line.replace(f"-t {DOC_TOPIC} ", f"-t {topic} ").replace("JOB_ID", A)
    done = subprocess.run(["bash", "-o", "pipefail", "-c", line], capture_output=True,
                          text=True, timeout=60)  # fmt: skip
    assert done.returncode == 0, (line, done.stderr)
    return done.stdout


def test_the_kcat_commands_read_jobs_status(topics: Topics, kafka_bootstrap: str) -> None:
    require("kcat")
    require("jq")
    commands = doc_commands()
    assert len(commands) == 4, commands
    producer = clients.producer(topics.settings)
    # A moved from partition 1 to 0 by a grow: its old record, read last, is older.
    for value, p in ((status(A, "SCHEDULED", 1), 1), (status(B, "QUEUED", 2), 0),
                     (status(A, "RUNNING", 3, attempt=1), 0), (status(C, "CANCELLED", 4), 0)):
        producer.produce(topics.status, encode_status(value), value.job_id.encode(), partition=p)
    producer.produce(topics.status, None, A.encode(), partition=1, headers=list(MOVED))
    producer.produce(topics.status, None, C.encode(), partition=0)  # C deleted
    producer.produce(topics.status, fresh(2).encode(), internal_key(LAYOUT_KEY), partition=1,
                     headers=list(INTERNAL))  # the store's own  # fmt: skip
    assert producer.flush(30) == 0

    every, fields, latest, one = (run(c, kafka_bootstrap, topics.status) for c in commands)
    pairs = [line.split("\t") for line in every.splitlines()]
    assert sorted(key for key, _ in pairs) == ["\x00h", A, A, A, B, C, C]
    assert sorted(JobStatus.model_validate_json(v).state for k, v in pairs if k == A and v) == [
        "RUNNING", "SCHEDULED"]  # fmt: skip
    assert [v for k, v in pairs if k == C][-1] == ""  # the tombstone
    picked = [line for line in fields.splitlines()]
    assert len(picked) == 4 and f'{{"job_id":"{A}","state":"RUNNING","attempt":1}}' in picked
    newest = {line for line in latest.splitlines()}
    assert f'{{"job_id":"{A}","state":"RUNNING","updated_at_ms":3}}' in newest
    assert len(newest) == 3
    assert JobStatus.model_validate_json(one).state == "RUNNING"


def ksql_columns() -> dict[str, str]:
    text = DOC.read_text()
    statement = re.search(r"CREATE TABLE job_status \((.*?)\) WITH \((.*?)\);", text, re.S)
    assert statement is not None, "docs/status.md has no CREATE TABLE job_status"
    assert "KAFKA_TOPIC='jobs.status'" in statement[2]
    assert "VALUE_FORMAT='JSON'" in statement[2]
    columns = {}
    for line in statement[1].strip().splitlines():
        name, _, sql_type = line.strip().rstrip(",").partition(" ")
        columns[name] = sql_type
    return columns


def sql_type(schema: dict, definitions: dict) -> set[str]:
    """The ksqlDB types a JSON Schema fragment of JobStatus may be declared as."""
    options = schema.get("anyOf", [schema])
    kinds = [o for o in options if o.get("type") != "null"]
    assert len(kinds) == 1, schema
    kind = kinds[0]
    if "$ref" in kind:
        ref = definitions[kind["$ref"].rsplit("/", 1)[-1]]
        inner = ", ".join(f"{name} {min(sql_type(field, definitions))}"
                          for name, field in ref["properties"].items())  # fmt: skip
        return {f"STRUCT<{inner}>"}
    values = kind.get("additionalProperties")
    if kind.get("type") == "object" and isinstance(values, dict) and values.get("type") == "object":
        return {"MAP<VARCHAR, MAP<VARCHAR, VARCHAR>>"}  # keys: objects of scalars by kind
    return {
        "string": {"VARCHAR"},
        "integer": {"INT", "BIGINT"},
        "number": {"DOUBLE"},
        "array": {"ARRAY<VARCHAR>"},
        "object": {"MAP<VARCHAR, VARCHAR>"},
    }[kind.get("type", "string") if "enum" not in kind else "string"]


def test_the_ksqldb_table_names_every_field_with_its_type() -> None:
    columns = ksql_columns()
    assert columns.pop("id") == "VARCHAR PRIMARY KEY"
    schema = JobStatus.model_json_schema()
    definitions = schema.get("$defs", {})
    assert list(columns) == list(JobStatus.model_fields)
    for name, declared in columns.items():
        field = schema["properties"][name]
        if "$ref" in field and "enum" in definitions[field["$ref"].rsplit("/", 1)[-1]]:
            field = {"type": "string"}  # JobState, an enum of strings
        assert declared in sql_type(field, definitions), (name, declared)
