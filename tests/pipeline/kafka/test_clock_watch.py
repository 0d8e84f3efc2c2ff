"""A process whose host clock is off reads the cluster's clock, measured against the
broker's stamps on its probes (real broker, real child process)."""

from __future__ import annotations

import os
import subprocess
import sys

import orjson
import pytest

from jobstream._ops.faults.host import skewed_clock_env
from jobstream._pipeline.clock import now_ms
from jobstream._pipeline.config import Settings
from jobstream._pipeline.topics import Topics

CHILD = """
import sys, orjson
from jobstream._pipeline import clock, metrics
from jobstream._pipeline.config import load_settings
from jobstream._pipeline.kafka.clock_watch import watch_clock
watch = watch_clock(load_settings(), "probe-test")
print(orjson.dumps({"now": clock.now_ms(), "correction": clock.correction_ms(),
    "metric": metrics.CLOCK_OFFSET.labels("probe-test")._value.get()}).decode())
watch.stop()
"""


def _child(settings: Settings, *env: tuple[str, str], **more: str) -> dict[str, float]:
    environ = {**os.environ, "JOBSTREAM_BOOTSTRAP_SERVERS": settings.bootstrap_servers,
               "JOBSTREAM_TOPIC_PREFIX": settings.topic_prefix, **dict(env), **more}
    done = subprocess.run([sys.executable, "-c", CHILD], env=environ, capture_output=True,
                          text=True, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    reading: dict[str, float] = orjson.loads(done.stdout.strip().splitlines()[-1])
    reading["seen"] = now_ms()
    return reading


@pytest.mark.parametrize("skew_ms", [5_000, -5_000])
def test_a_skewed_host_reads_the_clusters_clock(topics: Topics, settings: Settings,
                                                skew_ms: int) -> None:  # fmt: skip
    reading = _child(settings, *skewed_clock_env(skew_ms))
    assert reading["correction"] == pytest.approx(-skew_ms, abs=250)
    assert reading["metric"] == pytest.approx(-skew_ms / 1000, abs=0.25)
    assert reading["now"] <= reading["seen"] + 250, "corrected: not ahead of the true clock"


def test_correction_off_measures_but_leaves_the_clock(topics: Topics, settings: Settings) -> None:
    reading = _child(settings, *skewed_clock_env(5_000), JOBSTREAM_CLOCK_CORRECTION="false")
    assert reading["correction"] == 0
    assert reading["metric"] == pytest.approx(-5, abs=0.25)
