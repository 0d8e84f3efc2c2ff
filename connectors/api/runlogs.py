"""/api/v1/jobs/{id}/executions/{attempt}/logs: one run's log lines, from jobs.logs."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
from fastapi import APIRouter
from pydantic import BaseModel, Field, ValidationError

from jobstream._connectors.api.errors import ApiError
from jobstream._connectors.api.jobs import ERRORS, run_of
from jobstream._connectors.api.services import Auth, Svc
from jobstream._connectors.views.runlogs import read_logs

router = APIRouter(prefix="/api/v1/jobs", tags=["jobs"])


class LogLineOut(BaseModel):
    """One line a run wrote: a log record, or (``--isolation process``) a line of its
    stdout (logger ``stdout``, INFO) or stderr (``stderr``, ERROR)."""

    at_ms: int | None = None
    level: str | None = None
    logger: str | None = None
    msg: str = ""
    exc: str | None = Field(default=None,
                            description="The traceback of a record with an exception.")


class RunLogsOut(BaseModel):
    job_id: str
    execution_id: str
    attempt: int
    lines: list[LogLineOut] = Field(description="In the order the worker kept them.")
    dropped_lines: int = Field(description="Lines past JOBSTREAM_MAX_LOG_LINES or _BYTES, "
                               "not kept: the first ones are.")  # fmt: skip


@router.get("/{job_id}/executions/{attempt}/logs", response_model=RunLogsOut,
            responses=ERRORS)  # fmt: skip
async def run_logs(job_id: str, attempt: str, who: Auth, svc: Svc) -> RunLogsOut:
    """The log lines one run of the job wrote, kept with its outcome on jobs.logs:
    ``attempt`` is an attempt number (its latest firing's, for a recurring job) or an
    execution id. 404 for a run that has not ended (or whose record the views have not
    read yet: a moment), and once jobs.logs no longer holds it (its retention)."""
    svc.job(job_id, who)
    run = run_of(svc, job_id, attempt)
    execution_id = str(run["execution_id"])
    if run.get("log_lines") == 0:  # its worker wrote no record: the run logged nothing
        return RunLogsOut(job_id=job_id, execution_id=execution_id,
                          attempt=int(run["attempt"]), lines=[], dropped_lines=0)  # fmt: skip
    found = await asyncio.to_thread(read_logs, svc.settings, svc.store, job_id, execution_id)
    if found is None:
        raise ApiError(404, f"no log lines held of execution {execution_id}: it has not "
                            "ended yet, or jobs.logs no longer holds them", "attempt")  # fmt: skip
    return RunLogsOut(job_id=job_id, execution_id=execution_id, attempt=int(run["attempt"]),
                      lines=[_line(line) for line in found.lines],
                      dropped_lines=found.dropped)  # fmt: skip


def _line(line: dict[str, Any]) -> LogLineOut:
    try:
        return LogLineOut.model_validate(line)
    except ValidationError:  # written by another client, in a shape of its own: shown whole
        return LogLineOut(msg=orjson.dumps(line, default=str).decode())
