"""POST /api/v1/jobs/{id}/backfill: run a recurring job's occurrences of a past range.

The occurrences come from the job's own schedule as the views hold it
(:func:`jobstream._pipeline.scheduling.backfill.backfill_occurrences`); each becomes a one-off job
(:func:`jobstream._pipeline.jobs.backfill.occurrence_request`) whose id is fixed by (job id,
occurrence). An occurrence whose job the views or this API already hold is not sent
again; one sent twice all the same (two backfills at once, or a repeat the views have not
read yet) is dropped by the timers as a duplicate of its id. So each occurrence runs once,
however often the backfill is asked for, while the views keep the job (their retention,
7 days after it ends by default) or the timers its idempotency marker (7 days after it
fires).

The jobs are paced by their run times (``rate`` a second, oldest first), so the answer
comes once they are on jobs.intake, not once they have run. They count towards the
owner's job-type and pending-job quotas, not its submit rate: the backfill's own rate
paces them. They are sent in batches of ``api_max_batch_jobs``; a refusal part-way (a
quota, the broker) leaves the earlier batches sent, and asking again sends the rest.
"""

from __future__ import annotations

import asyncio

from fastapi import APIRouter

from jobstream._connectors.api.commands import ERRORS, recurring
from jobstream._connectors.api.errors import ApiError
from jobstream._connectors.api.feed import Doc
from jobstream._connectors.api.models import BackfillIn, BackfillOccurrence, BackfillOut
from jobstream._connectors.api.services import Auth, Services, Svc
from jobstream._connectors.views.large_params import read_large_params
from jobstream._connectors.views.query import params as stored_params
from jobstream._pipeline.clock import now_ms
from jobstream._pipeline.jobs.backfill import (
    BackfillSource,
    instant_text,
    occurrence_job_id,
    occurrence_request,
)
from jobstream._pipeline.scheduling import CronSpec
from jobstream._pipeline.scheduling.backfill import (
    DEFAULT_RATE,
    backfill_occurrences,
    check_rate,
    paced_run_at_ms,
    parse_instant_ms,
)
from jobstream._pipeline.serde import Event

router = APIRouter(prefix="/api/v1/jobs", tags=["commands"])


@router.post("/{job_id}/backfill", status_code=202, response_model=BackfillOut,
             responses=ERRORS)  # fmt: skip
async def backfill(job_id: str, body: BackfillIn, who: Auth, svc: Svc) -> BackfillOut:
    """Run a recurring job's occurrences in [from, to), once each, at ``rate`` a second.

    422 names ``from``, ``to`` or ``rate``: a range that is empty, in the future or holds
    more than 10,000 occurrences. 409: the job is not recurring. ``dry_run``: the
    occurrences and their job ids, nothing sent."""
    from_ms = parse_instant_ms(body.from_, "from")
    to_ms = parse_instant_ms(body.to, "to")
    rate = DEFAULT_RATE if body.rate is None else check_rate(body.rate)
    doc = svc.job(job_id, who)
    cron = recurring(doc)
    if cron is None:
        raise ApiError(409, f"job {job_id}: the views have not read its submission yet, "
                            "try again in a moment", "job_id")  # fmt: skip
    if not cron:
        raise ApiError(409, f"job {job_id} is not recurring: only a schedule is backfilled",
                       "job_id")  # fmt: skip
    now = now_ms()
    spec = CronSpec.from_avro(doc["schedule"]["cron"])
    # Off the event loop: 10,000 occurrences take about a second to compute.
    instants = await asyncio.to_thread(backfill_occurrences, spec, job_id=job_id,
                                       from_ms=from_ms, to_ms=to_ms, now_ms=now)  # fmt: skip
    owner = doc["owner"]
    ids = [occurrence_job_id(owner, job_id, instant) for instant in instants]
    known = [_held(svc, job) for job in ids]
    out = BackfillOut(job_id=job_id, from_ms=from_ms, to_ms=to_ms, rate=rate,
                      dry_run=body.dry_run, submitted=0, existing=sum(known),
                      occurrences=[])  # fmt: skip
    source = None if body.dry_run or all(known) else await _source(svc, doc)
    index = 0
    for instant, job, held in zip(instants, ids, known, strict=True):
        run_at = None
        if not held and not body.dry_run:
            run_at = paced_run_at_ms(index, now_ms=now, rate=rate)
            index += 1
        out.occurrences.append(BackfillOccurrence(
            occurrence_ms=instant, occurrence=instant_text(instant), job_id=job,
            created=run_at is not None, run_at_ms=run_at))  # fmt: skip
    if source is not None:
        await _send(svc, source, out)
    return out


def _held(svc: Services, job_id: str) -> bool:
    return svc.store.doc(job_id) is not None or svc.pending.get(job_id) is not None


async def _source(svc: Services, doc: Doc) -> BackfillSource:
    """What the occurrences copy: the job's submission as the views hold it, with its
    parameters from the views or, too large for them, from jobs.intake."""
    raw = stored_params(svc.store, doc["job_id"])
    if raw is None:
        raw = await asyncio.to_thread(read_large_params, svc.settings, svc.store, doc)
    if raw is None:
        raise ApiError(409, f"the parameters of job {doc['job_id']} are no longer held "
                            "(jobs.intake's retention): its occurrences cannot be run as "
                            "submitted", "job_id")  # fmt: skip
    return BackfillSource(
        job_id=doc["job_id"], job_type=doc["job_type"], owner=doc["owner"],
        params=raw.decode(), priority=doc.get("priority") or "NORMAL",
        retry=doc.get("retry"), timeout_ms=doc.get("timeout_ms"),
        labels=doc.get("labels") or {}, pool=doc.get("pool"),
    )  # fmt: skip


async def _send(svc: Services, source: BackfillSource, out: BackfillOut) -> None:
    """Send the occurrences ``out`` creates, a batch at a time, counting what was sent."""
    now = now_ms()
    new = [item for item in out.occurrences if item.created]
    size = svc.api.api_max_batch_jobs
    for start in range(0, len(new), size):
        events = await asyncio.to_thread(_events, source, new[start : start + size], now)
        await svc.send(events)  # no token: the owner's quotas apply, not its submit rate
        for event in events:
            svc.accept(event.data)
        out.submitted += len(events)


def _events(source: BackfillSource, items: list[BackfillOccurrence], now: int) -> list[Event]:
    events = []
    for item in items:
        assert item.run_at_ms is not None  # created: paced
        request = occurrence_request(source, item.occurrence_ms, run_at_ms=item.run_at_ms)
        events.append(request.to_event(now))
    return events
