"""Micro-benchmark of the Avro codecs on the hot events, per record, in one process.

``python -m jobstream._ops.bench.codecs`` builds the records one no-op job produces, as the engine
builds them (a JobSubmitted through the timer processor on a driver: SCHEDULED,
ExecutionRequested, FIRED; the worker's STARTED and SUCCEEDED), then times encoding and
decoding each of them several ways:

- ``serde``: the engine's ``AvroSerializer`` / ``AvroDeserializer`` (header, then the typed
  record's own codec, pipeline/serde/direct.py);
- ``fastavro``: ``schemaless_writer`` / ``schemaless_reader`` alone on the parsed schema;
- ``parse per call``: the same with the schema parsed for every record;
- ``resolve``: decoding with a reader schema as well as the writer's (what a record of an
  older released version costs);
- ``+ dict``: the record's dict built anew per encode (a copy), the churn of building
  events as dicts;
- ``cavro``: the cavro package (Cython), schema built once, when installed
  (``pip install cavro``; not a dependency).

Times are CPU seconds (``time.process_time``) over ``--number`` records, the best of
``--repeat`` rounds, per record in µs: a relative cost, steadier than wall time on a busy
machine. docs/benchmarks.md, "Codecs", records a run.
"""

from __future__ import annotations

import importlib.util
import io
import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer
from fastavro import parse_schema, schemaless_reader, schemaless_writer
from rich.table import Table

from jobstream._ops.bench.report import console, load_average, write_results
from jobstream._pipeline.config import load_settings
from jobstream._pipeline.model.job import JobRequest
from jobstream._pipeline.model.records import ExecutionRequested, plain, typed
from jobstream._pipeline.runtime.driver import ProcessorDriver
from jobstream._pipeline.serde import Event, make_serde
from jobstream._pipeline.serde.avro import SINGLE_OBJECT_HEADER_SIZE
from jobstream._pipeline.serde.schemas import event_schemas
from jobstream._pipeline.timers.processor import TimerProcessor
from jobstream._pipeline.topics import Topics
from jobstream._pipeline.worker import outcomes
from jobstream._pipeline.worker.results import encode_result

T0 = 1_798_000_000_000


def hot_events() -> dict[str, Event]:
    """The records of one one-off no-op job, built by the engine's own code."""
    settings = load_settings()
    submitted = JobRequest(job_type="bench.noop", owner="bench", params={}).to_event(T0)
    with tempfile.TemporaryDirectory() as folder:
        driver = ProcessorDriver(TimerProcessor(settings), Path(folder), now_ms=T0)
        try:
            outputs = driver.pipe(Topics(settings).intake, submitted) + driver.advance(10)
        finally:
            driver.close()
    found = {"JobSubmitted": submitted}
    for output in outputs:
        event = output.value
        if not isinstance(event, Event):  # the timers emit only events
            continue
        label = event.name if event.name != "JobLifecycle" else str(event.data["kind"])
        found[label] = event
    execution = typed("ExecutionRequested", found["ExecutionRequested"].data)
    assert isinstance(execution, ExecutionRequested)
    found["STARTED"] = outcomes.started(execution, worker_id="w-0", now_ms=T0 + 20)
    found["SUCCEEDED"] = outcomes.succeeded(execution, encode_result(None),
                                            results_topic=Topics(settings).results,
                                            worker_id="w-0", now_ms=T0 + 21)  # fmt: skip
    return found


def per_record_us(action: Callable[[], object], number: int, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        for _ in range(number):
            action()
        best = min(best, time.process_time() - start)
    return 1e6 * best / number


Call = Callable[[], object]


def ways(event: Event) -> dict[str, tuple[Call, Call]]:
    """Name -> (encode, decode) of ``event``, each a call with no arguments."""
    serialize, deserialize = make_serde()
    current = event_schemas().current(event.name)
    parsed, raw = current.parsed, json.loads(current.to_json())
    data = plain(event.data)  # what the Avro writers take
    encoded = serialize(event)
    body = encoded[SINGLE_OBJECT_HEADER_SIZE:]

    def write(schema: Any, record: dict[str, Any]) -> bytes:
        out = io.BytesIO()
        schemaless_writer(out, schema, record, strict_allow_default=True)
        return out.getvalue()

    found: dict[str, tuple[Call, Call]] = {
        "serde": (lambda: serialize(event), lambda: deserialize(encoded)),
        "fastavro": (lambda: write(parsed, data),
                     lambda: schemaless_reader(io.BytesIO(body), parsed, None)),
        "fastavro, parse per call": (lambda: write(parse_schema(raw), data),
                                     lambda: schemaless_reader(io.BytesIO(body),
                                                               parse_schema(raw), None)),
        "fastavro, resolve": (lambda: None,
                              lambda: schemaless_reader(io.BytesIO(body), parsed, parsed)),
        "fastavro + dict": (lambda: write(parsed, {**data}), lambda: None),
    }  # fmt: skip
    if importlib.util.find_spec("cavro") is not None:
        found["cavro"] = _cavro(raw, data, body)
    return found


def _cavro(raw: dict[str, Any], data: dict[str, Any], body: bytes) -> tuple[Call, Call]:
    import cavro

    options = cavro.DEFAULT_OPTIONS.replace(record_decodes_to_dict=True,
                                            record_can_encode_dict=True)  # fmt: skip
    schema = cavro.Schema(raw, options=options)
    if schema.binary_decode(body) is None or schema.binary_encode(data) != body:
        raise RuntimeError("cavro does not write what fastavro writes")
    return (lambda: schema.binary_encode(data), lambda: schema.binary_decode(body))


def main(
    number: int = typer.Option(3000, "--number", min=1, help="Records per round."),
    repeat: int = typer.Option(5, "--repeat", min=1, help="Rounds; the best one counts."),
    out: Path | None = typer.Option(None, "--out", help="Write the results here as JSON."),
) -> None:
    """Time encoding and decoding the hot events, per record, several ways."""
    results: dict[str, dict[str, dict[str, float | None]]] = {}
    report: dict[str, Any] = {"load_average_start": load_average()}
    for label, event in hot_events().items():
        results[label] = {}
        for name, (encode, decode) in ways(event).items():
            cost = {"encode_us": per_record_us(encode, number, repeat),
                    "decode_us": per_record_us(decode, number, repeat)}  # fmt: skip
            # a no-op placeholder: this way has no such half
            results[label][name] = {k: (None if v < 0.2 else round(v, 2)) for k, v in cost.items()}
    report.update(results=results, load_average_end=load_average())
    table = Table(title="µs of CPU per record, encode / decode (best of rounds)")
    names = list(next(iter(results.values())))
    table.add_column("event")
    for name in names:
        table.add_column(name, justify="right")
    for label, by_way in results.items():
        cells = [f"{_us(c['encode_us'])} / {_us(c['decode_us'])}" for c in by_way.values()]
        table.add_row(label, *cells)
    console.print(table)
    write_results(out, report)


def _us(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


if __name__ == "__main__":
    typer.run(main)
