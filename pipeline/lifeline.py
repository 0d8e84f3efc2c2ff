"""A process started by a supervisor ends when its supervisor ends, however that ends.

The supervisor holds the write end of a pipe and passes the read end to each child,
naming it in ``JOBSTREAM_LIFELINE_FD``. Nothing is ever written: the read returns only
when every write end has closed, which the kernel does when the supervisor's process
ends, by SIGKILL too. The child then stops as SIGTERM would stop it (draining, committing
what it can), and kills itself if that takes longer than :data:`GRACE_S`.

A pipe rather than ``PR_SET_PDEATHSIG``: the death signal follows the thread that forked
the child, and a supervisor restarts children from whichever thread noticed the exit.
"""

from __future__ import annotations

import logging
import os
import signal
import threading

log = logging.getLogger(__name__)

ENV = "JOBSTREAM_LIFELINE_FD"
GRACE_S = 30.0
"""How long a child whose supervisor has gone may take to stop before it kills itself."""


def watch_supervisor(grace_s: float = GRACE_S) -> None:
    """When started with a lifeline, stop this process once the supervisor is gone, and
    kill it if it has not stopped ``grace_s`` later.

    The variable is removed from the environment, so that this process's own children
    do not take a descriptor number that is not theirs for a lifeline."""
    raw = os.environ.pop(ENV, None)
    if raw is None:
        return
    try:
        fd = int(raw)
        os.fstat(fd)
    except (ValueError, OSError) as exc:
        log.warning("ignoring %s=%r: %s", ENV, raw, exc)
        return
    threading.Thread(target=_wait_for_eof, args=(fd, grace_s), name="lifeline",
                     daemon=True).start()  # fmt: skip


def _wait_for_eof(fd: int, grace_s: float) -> None:
    while True:
        try:
            if not os.read(fd, 1):
                break
        except InterruptedError:
            continue
        except OSError:
            break
    log.warning("the supervisor is gone: stopping (killed in %g s if not stopped by then)",
                grace_s)  # fmt: skip
    os.kill(os.getpid(), signal.SIGTERM)
    threading.Event().wait(grace_s)
    log.error("still running %g s after the supervisor ended: killing this process", grace_s)
    os.kill(os.getpid(), signal.SIGKILL)
