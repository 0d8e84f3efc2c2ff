"""Imported by Python at start-up in a process whose PYTHONPATH begins with this folder:
the wall clock the process reads (``time.time``, ``time.time_ns``) runs
``JOBSTREAM_FAULTS_CLOCK_OFFSET_MS`` off the machine's, as on a host whose clock is
skewed. Monotonic clocks, and the Kafka client's own clock, keep the machine's time."""

import os
import time

_offset_ms = int(os.environ.get("JOBSTREAM_FAULTS_CLOCK_OFFSET_MS", "0"))
if _offset_ms:
    _time, _time_ns = time.time, time.time_ns
    time.time = lambda: _time() + _offset_ms / 1000
    time.time_ns = lambda: _time_ns() + _offset_ms * 1_000_000
