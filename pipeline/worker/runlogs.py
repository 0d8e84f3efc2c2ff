"""A run's log lines on jobs.logs: one record per ended run that wrote any, in its
outcome's transaction.

Whatever way a run ends (SUCCEEDED, FAILED, TIMED_OUT, CANCELLED, its child process
crashed, given up when the worker stopped), the worker produces what was captured of it
(pipeline/worker/capture.py; for ``--isolation process`` also its child's stdout and
stderr, pipeline/worker/output.py) to jobs.logs in the transaction of its outcome, so the
lines are there exactly when the outcome is. The outcome's ``log_lines`` tells how many
lines the run kept: a run that kept none and dropped none writes no record (most runs of
a busy type log nothing: a record each was a tenth of a no-op job's records), and readers
answer its empty log from that count. A record that never ran its handler (skipped,
cancelled before it started) has none.

| part | what |
|---|---|
| key | the job id: a plain consumer finds a job's runs by key, as on jobs.results |
| value | JSON lines, one object per line (below); empty for a run that wrote nothing |
| header ``execution-id`` | the run (``<job>:<fire ms>:<attempt>``) |
| header ``attempt`` | its attempt, as decimal text |
| header ``dropped-lines`` | lines past the bounds, not kept (decimal; ``0`` when none) |

A line (:class:`~jobstream._pipeline.worker.capture.LogLine`) has ``at_ms``, ``level``, ``logger``,
``msg`` and, for a record with an exception, ``exc`` (its traceback).
The lines of a process-isolated run's stdout and stderr have ``logger`` ``stdout`` and
``stderr`` and ``level`` ``INFO`` and ``ERROR``.

The topic's cleanup is ``delete`` after ``JOBSTREAM_LOGS_RETENTION`` (7 days), not
compaction: keyed by job id, compaction would keep a job's last run's lines only (a
retry's would replace the first attempt's, which are the ones that say why it failed);
keyed by execution id, every key is written once and compaction would have nothing to
do. Deletion by age bounds the topic by time whatever the jobs do.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime

import orjson

from jobstream._pipeline.model.records import ExecutionRequested
from jobstream._pipeline.worker.capture import RunLog
from jobstream._pipeline.worker.results import ATTEMPT_HEADER, EXECUTION_HEADER

DROPPED_HEADER = "dropped-lines"


Record = tuple[bytes, bytes, list[tuple[str, bytes]]]
"""(key, value, headers) of a record to produce."""


def logs_record(log: RunLog, execution: ExecutionRequested) -> tuple[Record | None, int | None]:
    """(the run's record on jobs.logs, None when it kept and dropped no line; the outcome's
    ``log_lines``: the lines kept, 0 only when there is no record, so None for a run that
    kept none but dropped some); takes the run's lines, so that what its handler writes
    afterwards is not kept."""
    value, kept, dropped = log.take()
    if not kept and not dropped:
        return None, 0
    headers = [(EXECUTION_HEADER, execution.execution_id.encode()),
               (ATTEMPT_HEADER, str(execution.attempt).encode()),
               (DROPPED_HEADER, str(dropped).encode())]  # fmt: skip
    return (execution.job_id.encode(), value, headers), kept or None


def decode_lines(value: bytes) -> list[dict[str, object]]:
    """The lines of a record's value, each a JSON object: a worker's are LogLines, another
    client's may hold anything; a line that is not a JSON object is kept as the message of
    a line of its own."""
    lines = []
    for raw in value.splitlines():
        if not raw.strip():
            continue
        try:
            line = orjson.loads(raw)
        except orjson.JSONDecodeError:
            line = None
        if not isinstance(line, dict):
            line = {"msg": raw.decode(errors="replace")}
        lines.append(line)
    return lines


def format_line(line: Mapping[str, object]) -> str:
    """A line as ``jobstream logs`` prints it: UTC time, level, logger, message, and the
    traceback below it."""
    at = line.get("at_ms")
    when = (datetime.fromtimestamp(at / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
            if isinstance(at, int) else "-")  # fmt: skip
    level, logger = line.get("level") or "-", line.get("logger") or "-"
    text = f"{when} {level!s:<7} {logger}: {line.get('msg', '')}"
    exc = line.get("exc")
    return f"{text}\n{exc}" if exc else text
