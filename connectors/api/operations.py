"""/api/v1/workers and /api/v1/dlq: worker health, dead letters and their redrive.

Dead letters are read from the jobs.dlq.<type> topics on a thread (the reader blocks), and
an owner token reads and redrives its own owner's only, whatever the filter asks.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

from fastapi import APIRouter, Query

from jobstream._connectors.api.auth import Principal
from jobstream._connectors.api.commands import requester
from jobstream._connectors.api.errors import Responses
from jobstream._connectors.api.models import (
    DeadLetterOut,
    DeadLetters,
    Problem,
    RedriveIn,
    RedriveOut,
    WorkerOut,
    Workers,
)
from jobstream._connectors.api.services import Auth, Services, Svc
from jobstream._connectors.views import workers
from jobstream._pipeline.dlq.reader import DlqFilter, DlqReader, summary
from jobstream._pipeline.dlq.redrive import Redriver, select
from jobstream._pipeline.model import rules

router = APIRouter(prefix="/api/v1", tags=["operations"])

ERRORS: Responses = {code: {"model": Problem} for code in (401, 422)}


@router.get("/workers", response_model=Workers, responses=ERRORS)
def list_workers(who: Auth, svc: Svc) -> Workers:
    """Every worker's latest heartbeat, its age, and whether it is stale."""
    found = workers(svc.store, stale_after_ms=svc.api.worker_stale_after)
    return Workers(workers=[WorkerOut(**{**w, "running": len(w.get("running") or [])})
                            for w in found])  # fmt: skip


def _owner(who: Principal, asked: str | None) -> str | None:
    """The owner a dead-letter query may see: an owner token's own, whatever it asks."""
    return asked if who.admin else who.owner


def _read(svc: Services, selection: DlqFilter) -> list[Any]:
    with DlqReader(svc.settings, timeout_s=30) as reader:
        return list(reader.read(selection))


@router.get("/dlq", response_model=DeadLetters, responses=ERRORS)
async def dead_letters(who: Auth, svc: Svc,
                       type: str | None = Query(None, description="Job type."),
                       error_type: str | None = None, owner: str | None = None,
                       since_ms: int | None = None, until_ms: int | None = None,
                       limit: int = Query(100, ge=1, le=10_000)) -> DeadLetters:  # fmt: skip
    """Dead letters, the latest of each job, oldest first."""
    if not who.admin and owner is not None and owner != who.owner:
        return DeadLetters(items=[])
    selection = DlqFilter(job_type=type, error_type=error_type, owner=_owner(who, owner),
                          since_ms=since_ms, until_ms=until_ms)  # fmt: skip
    records = select(await asyncio.to_thread(_read, svc, selection), limit)
    return DeadLetters(items=[DeadLetterOut(**summary(r)) for r in records])


@router.post("/dlq/redrive", response_model=RedriveOut, responses=ERRORS)
async def redrive(body: RedriveIn, who: Auth, svc: Svc) -> RedriveOut:
    """Put dead-lettered jobs back through jobs.retry, at most ``rate`` a second."""
    if not who.admin and body.owner is not None and body.owner != who.owner:
        return RedriveOut(job_ids=[], dry_run=body.dry_run)
    if body.why is not None:
        rules.field_check("why", rules.reason, body.why)
    selection = replace(body, owner=_owner(who, body.owner))

    def run() -> list[str]:
        chosen = select(_read(svc, selection), body.limit)
        redriver = Redriver(svc.settings, rate=body.rate)
        try:
            report = redriver.redrive(chosen, dry_run=body.dry_run, requested_by=requester(who),
                                      reason=body.why)  # fmt: skip
        finally:
            redriver.close()
        return [record.job_id for record in report.redriven]

    return RedriveOut(job_ids=await asyncio.to_thread(run), dry_run=body.dry_run)
