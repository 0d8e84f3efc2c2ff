"""How late the workers launched the handlers, from their own histogram.

A run's STARTED tells when its worker decided to start it (for a run claimed ahead of its
due instant, that instant); the handler is launched after the claim's commit, or on the
instant. ``jobstream_start_lateness_seconds`` is observed at the launch
(pipeline/runtime/observed.py), so the workers' /metrics, read at the end of a run, give
the lateness of the launches themselves, to the resolution of the histogram's buckets.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from jobstream._ops.scrape import scrape

METRIC = "jobstream_start_lateness_seconds"
QUANTILES = (0.5, 0.9, 0.99)


def read_buckets(ports: Iterable[int]) -> dict[float, float]:
    """The histogram's cumulative bucket counts (by upper bound, seconds), summed over the
    workers serving /metrics on ``ports``."""
    buckets: dict[float, float] = {}
    for port in ports:
        for (name, labels), count in scrape(port).items():
            if name == f"{METRIC}_bucket":
                bound = float(dict(labels)["le"])
                buckets[bound] = buckets.get(bound, 0.0) + count
    return dict(sorted(buckets.items()))


def summarize_buckets(buckets: dict[float, float]) -> dict[str, Any]:
    """Launches counted, the share within each bound, for each quantile the bound it is
    within, and the bound every launch is within (ms; None past the last finite bound)."""
    total = buckets.get(float("inf"), 0.0)
    if not total:
        return {"count": 0}
    finite = {bound: n for bound, n in buckets.items() if bound != float("inf")}
    shares = {f"{bound * 1000:g}": round(n / total, 4) for bound, n in finite.items()}
    within = {f"p{round(q * 100)}_within_ms": next(
        (bound * 1000 for bound, n in finite.items() if n >= q * total), None)
        for q in QUANTILES}  # fmt: skip
    every = next((bound * 1000 for bound, n in finite.items() if n >= total), None)
    return {"count": int(total), "share_within_ms": shares, **within, "max_within_ms": every}
