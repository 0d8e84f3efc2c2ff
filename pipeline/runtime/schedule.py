"""When a transaction commits: one transaction carries the work of many records.

A Kafka transaction costs a flush and a few round trips to the broker, and the broker a
marker on every partition written, whatever it carries, so committing on every loop
iteration caps a process at a few hundred records a second. :class:`CommitSchedule`
batches instead (the processor runner and every worker lane use it):

- a commit is due once ``interval_s`` has passed since the previous one, or as soon as
  ``max_pending`` records wait (a bound on the size of one transaction);
- after an idle spell the first record is committed at once (the interval counts from
  the previous commit, not from the first record waiting), so a lone job is not delayed;
  under load, results reach their topics at most ``interval_s`` after they are decided.

- a worker's outcomes wait a little longer (``grace_s``) when a claim is to commit within
  that time: a claim's transaction takes every outcome waiting, so they ride it rather
  than make a transaction of their own between two claims;
- a transaction holding a record that other components wait on (a StepEnded, which
  children of a workflow wait on; a workflow job's outcome, which that StepEnded waits
  on) is *hurried*: it commits at once rather than after the interval, so a release is
  not delayed by an interval at each hop. The next commit clears it.

Forced commits (before a partition is revoked, at the end of a drain) do not ask.

Pure: the caller passes the monotonic time, so the policy is unit-tested without a clock.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_INTERVAL_S = 0.1
DEFAULT_MAX_PENDING = 1000


@dataclass(slots=True)
class CommitSchedule:
    interval_s: float = DEFAULT_INTERVAL_S
    """Least time between two transactions while records keep coming."""
    max_pending: int = DEFAULT_MAX_PENDING
    """Records that make a commit due before the interval has passed."""
    last_commit: float = float("-inf")
    """Monotonic instant of the previous commit."""
    hurried: bool = False
    """A record waiting should not wait for the interval (see :meth:`hurry`)."""

    def __post_init__(self) -> None:
        if self.interval_s < 0:
            raise ValueError(f"commit interval must not be negative, got {self.interval_s}")
        if self.max_pending < 1:
            raise ValueError(f"max pending records must be at least 1, got {self.max_pending}")

    def due(self, now: float, pending: int, grace_s: float = 0.0) -> bool:
        """Whether ``pending`` records (or moved offsets, counted as 0) should commit now;
        ``grace_s`` longer than the interval when another commit that takes them is
        expected within it."""
        return (self.hurried or pending >= self.max_pending
                or now >= self.last_commit + self.interval_s + grace_s)  # fmt: skip

    def hurry(self) -> None:
        """Make the next commit due at once: a record waiting holds up work elsewhere.
        It stays so until a commit succeeds (an aborted one is retried as promptly)."""
        self.hurried = True

    def committed(self, now: float) -> None:
        self.last_commit = now
        self.hurried = False
