"""What the routes share: the views, the intake producer, the tokens, the settings.

Held on ``app.state.services``; :func:`principal` is the dependency that authenticates a
request and :func:`services` the one that hands the routes their parts.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Annotated

from fastapi import Depends, Request

from jobstream._connectors.api.auth import Principal, TokenTable
from jobstream._connectors.api.errors import ApiError
from jobstream._connectors.api.feed import Doc, Feed
from jobstream._connectors.api.gate import QuotaGate, submissions_of
from jobstream._connectors.api.pending import Pending
from jobstream._connectors.api.producer import AsyncIntake, NotAcknowledged
from jobstream._connectors.api.settings import ApiSettings
from jobstream._connectors.views import ViewStore
from jobstream._connectors.views.pools import with_waiting
from jobstream._connectors.views.process import UpdaterProcess
from jobstream._pipeline.config import Settings
from jobstream._pipeline.model.records import JobSubmitted
from jobstream._pipeline.quotas.topic import QuotaBoard
from jobstream._pipeline.serde import Event

UNAUTHORIZED = {"WWW-Authenticate": "Bearer"}


@dataclass
class Services:
    settings: Settings
    api: ApiSettings
    store: ViewStore
    intake: AsyncIntake
    tokens: TokenTable
    updater: UpdaterProcess | None = None
    pending: Pending = field(default_factory=Pending)
    feed: Feed = field(default_factory=Feed)
    quota_board: QuotaBoard = field(default_factory=QuotaBoard)
    """The owners' overrides (jobs.quotas, which the API server follows)."""
    quotas: QuotaGate = field(init=False)
    link_secret: bytes = field(init=False, repr=False)
    """What signs one-time approval links (connectors/api/links.py)."""

    def __post_init__(self) -> None:
        self.quotas = QuotaGate(self.api.default_quota(), self.quota_board)
        configured = self.api.api_link_secret
        self.link_secret = (configured.get_secret_value().encode() if configured
                            else secrets.token_bytes(32))  # fmt: skip

    def job(self, job_id: str, principal: Principal) -> Doc:
        """The job as the views (or, just accepted, this API) hold it; 404 when it is not
        there or belongs to another owner, so an id tells nothing about other owners."""
        doc = self.store.doc(job_id)
        if doc is not None:
            self.pending.discard(job_id)
        else:
            doc = self.pending.get(job_id)
        if doc is None or not principal.sees(doc["owner"]):
            raise ApiError(404, f"job {job_id} not found", "job_id")
        return doc

    def shown(self, docs: Sequence[Doc]) -> list[Doc]:
        """``docs`` as the API shows them: with ``waiting_for_pool`` (connectors/views/pools.py)."""
        return with_waiting(docs, self.store, stale_after_ms=self.api.worker_stale_after)

    def publish(self, docs: list[Doc]) -> None:
        """The view updater's listener: hand its changed documents, as shown, to the live
        stream's subscribers (none: nothing to compute)."""
        if len(self.feed):
            self.feed.publish(self.shown(docs))


    async def send(self, events: list[Event], who: Principal | None = None, *,
                   batch: bool = False) -> None:  # fmt: skip
        """Produce ``events`` to jobs.intake and await their acknowledgement; 503 if none.

        The jobs they submit pass the owners' quotas first (429 naming the first one
        passed, nothing sent), the submission rate of ``who``'s token too when given;
        ``batch``: the events are a batch's, a refused job type is ``jobs[i]``'s."""
        submissions = list(submissions_of(events, batch=batch))
        reservation = self.quotas.admit(who, submissions, self.store) if submissions else None
        try:
            await self.intake.send(events)
        except NotAcknowledged as exc:
            if reservation is not None:
                self.quotas.release(reservation)
            raise ApiError(503, f"the broker did not take the submission: {exc}") from exc

    def accept(self, submitted: JobSubmitted) -> None:
        """Hold a JobSubmitted record just sent, shown SUBMITTED until the views read it."""
        self.pending.add(submitted)


def services(request: Request) -> Services:
    found: Services = request.app.state.services
    return found


def principal(request: Request) -> Principal:
    """The principal of the request's bearer token; 401 without a valid one."""
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise ApiError(401, "a bearer token is required (Authorization: Bearer <token>)",
                       "Authorization", UNAUTHORIZED)  # fmt: skip
    found = services(request).tokens.lookup(token.strip())
    if found is None:
        raise ApiError(401, "the bearer token is not valid", "Authorization", UNAUTHORIZED)
    request.state.principal = found  # the access log names it
    return found


Auth = Annotated[Principal, Depends(principal)]
"""An endpoint's caller, from its bearer token."""
Svc = Annotated[Services, Depends(services)]
