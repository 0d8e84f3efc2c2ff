"""/api/v1/quotas/{owner}: an owner's quotas and use; an admin sets and clears them.

An override is written to jobs.quotas (pipeline/quotas/topic.py), which every API
process follows: it applies here at once and in the others within a second. Quotas an
override leaves out take the defaults (``JOBSTREAM_QUOTA_*``, docs/api.md).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from confluent_kafka import KafkaException
from fastapi import APIRouter, Response

from jobstream._connectors.api.auth import Principal
from jobstream._connectors.api.errors import ApiError, Responses
from jobstream._connectors.api.models import Problem, QuotaIn, QuotasOut
from jobstream._connectors.api.services import Auth, Services, Svc
from jobstream._pipeline.errors import JobstreamError
from jobstream._pipeline.quotas.model import Quota
from jobstream._pipeline.quotas.topic import check_owner, clear_quota, set_quota

router = APIRouter(prefix="/api/v1/quotas", tags=["quotas"])

ERRORS: Responses = {
    code: {"model": Problem} for code in (401, 403, 404, 422, 503)
}


def quotas_out(svc: Services, owner: str, token: str | None = None) -> QuotasOut:
    return QuotasOut.model_validate(svc.quotas.usage(owner, svc.store, token))


def _admin(who: Principal) -> None:
    if not who.admin:
        raise ApiError(403, "only an admin token sets or clears quotas", "Authorization")


@router.get("/{owner}", response_model=QuotasOut, responses=ERRORS)
def get_quotas(owner: str, who: Auth, svc: Svc) -> QuotasOut:
    """An owner's quotas and what it uses of each (an owner token: its own only, else 404)."""
    if not who.sees(owner):
        raise ApiError(404, f"no quotas of owner {owner} for this token", "owner")
    check_owner(owner)
    return quotas_out(svc, owner, None if who.admin else who.token)


@router.put("/{owner}", response_model=QuotasOut, responses=ERRORS)
async def put_quotas(owner: str, body: QuotaIn, who: Auth, svc: Svc) -> QuotasOut:
    """Replace an owner's override (admin only): the quotas left out take the defaults."""
    _admin(who)
    check_owner(owner)
    quota = Quota(**body.model_dump(exclude_none=True))
    if quota.is_empty:
        raise ApiError(422, "body: sets no quota (DELETE clears an override)", "body")
    await _write(svc, lambda: set_quota(svc.settings, owner, quota, set_by=who.actor))
    svc.quota_board.set(owner, quota)
    return quotas_out(svc, owner)


@router.delete("/{owner}", status_code=204, responses=ERRORS)
async def delete_quotas(owner: str, who: Auth, svc: Svc) -> Response:
    """Clear an owner's override (admin only): the defaults apply to it again."""
    _admin(who)
    check_owner(owner)
    await _write(svc, lambda: clear_quota(svc.settings, owner, set_by=who.actor))
    svc.quota_board.clear(owner)
    return Response(status_code=204)


async def _write(svc: Services, write: Callable[[], None]) -> None:
    try:
        await asyncio.to_thread(write)
    except (JobstreamError, KafkaException, BufferError) as exc:
        raise ApiError(503, f"jobs.quotas not written: {exc}") from exc
