"""A run's lease as its worker sees it, so that a zombie stops itself.

The status processor holds each running job's lease: it runs from when it reads the run's
STARTED or latest HEARTBEAT, and a run whose lease passes is LOST and retried elsewhere. A
worker that is paused or cut off from the brokers cannot know that happened, but it knows
when its heartbeats last reached them: each HEARTBEAT's delivery report. The status
processor read that HEARTBEAT no sooner than it was sent, so its lease runs at least until
the send plus the lease. The worker holds the run for the lease less a margin from the last
send that reached the brokers (from the claim, before the first); past that, the run has
lost its lease here: ``ctx.lease_ok`` turns False for good, and the worker stops the run
itself (pipeline/worker/supervisor.py) before the status processor's lease passes, so its
retry never runs beside it. The margin is the time the handler has to notice.

Times are monotonic seconds, on the clock the worker is given (a test's, in the driver).
"""

from __future__ import annotations

from collections.abc import Callable

LEASE_S = 30.0
"""The status processor's lease by default (``jobstream status-processor --lease``)."""
MARGIN_SHARE = 0.25
"""The share of the lease a run keeps back: it stops after 3/4 of the lease without a
HEARTBEAT reaching the brokers (22.5 s of 30 s: two heartbeats missed at the default 10 s)."""


class RunLease:
    def __init__(self, *, lease_s: float, claimed_at: float, clock: Callable[[], float]) -> None:
        self._held_s = lease_s * (1 - MARGIN_SHARE)
        self._until = claimed_at + self._held_s
        self._lost = False
        self._clock = clock

    @property
    def until(self) -> float:
        """When the run loses its lease here, unless a HEARTBEAT sent before then lands."""
        return self._until

    @property
    def ok(self) -> bool:
        """Whether the run still holds its lease; once False, False for good."""
        if not self._lost and self._clock() >= self._until:
            self._lost = True
        return not self._lost

    def confirm(self, sent_at: float) -> None:
        """A HEARTBEAT sent at ``sent_at`` reached the brokers. One landing after the lease
        was lost here extends nothing: the run may have been retried meanwhile."""
        if self.ok:
            self._until = max(self._until, sent_at + self._held_s)
