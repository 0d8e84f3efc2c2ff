"""When a scenario's jobs fall due, and how they are submitted: jobstream's scenarios.

The same shapes as ops/bench/pipeline_run.py's ``Load``, so that both systems get the
same offered load:

- *steady*: ``rate`` jobs a second for ``duration_s``, job i due ``i * 1000 // rate`` ms
  after the first; paced: each job is submitted ``lead_s`` before it falls due.
- *burst*: ``count`` jobs all due at the same instant, submitted at once; the first (and
  every) job falls due ``lead_s`` after submission starts, so ``lead_s`` must cover the
  submission (the result's ``submitted_after_due`` says whether it did).
"""

from __future__ import annotations

from dataclasses import dataclass

SCENARIOS = ("steady", "burst")


@dataclass(frozen=True)
class Load:
    scenario: str
    offsets_ms: list[int]
    """Due times from the first due time, sorted."""
    lead_s: float
    """How long before its due time a job is submitted (paced), or how long after
    submission starts the jobs fall due (not paced)."""
    paced: bool

    @classmethod
    def steady(cls, rate: int, duration_s: float, lead_s: float) -> Load:
        _check(rate > 0 and duration_s > 0, "steady needs rate > 0 and duration_s > 0")
        _check(lead_s > 0, "lead_s must be positive")
        count = int(rate * duration_s)
        return cls("steady", [i * 1000 // rate for i in range(count)], lead_s, paced=True)

    @classmethod
    def burst(cls, count: int, lead_s: float) -> Load:
        _check(count > 0, "burst needs a count > 0")
        _check(lead_s > 0, "lead_s must be positive")
        return cls("burst", [0] * count, lead_s, paced=False)

    @classmethod
    def of(cls, scenario: str, *, rate: int, duration_s: float, burst: int,
           lead_s: float) -> Load:  # fmt: skip
        if scenario == "steady":
            return cls.steady(rate, duration_s, lead_s)
        if scenario == "burst":
            return cls.burst(burst, lead_s)
        raise ValueError(f"scenario must be one of {SCENARIOS}, not {scenario!r}")


def _check(condition: bool, message: str) -> None:
    if not condition:
        raise ValueError(message)
