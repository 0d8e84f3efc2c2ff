"""How a long-running process learns it should stop."""

from __future__ import annotations

import signal
import threading


def stop_on_signals() -> threading.Event:
    """An event set by SIGTERM or SIGINT: the process finishes its batch and stops."""
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    return stop
