"""The labels the engine itself puts on a job (their names begin ``jobstream.``).

Here rather than beside the code that sets them, so that a handler's process reads them
without loading what writes them: the workflow commands load the Avro serde, which a
handler's child process must not (pipeline/worker/child.py).
"""

from __future__ import annotations

STEP_LABEL = "jobstream.step"
"""The label a step's job carries its name in (its handler and jobs.status see it)."""

SINGLETON_LABEL = "jobstream.singleton"
"""Set (to the key) on a singleton job by its key's timers: it has been admitted or queued
there, and its end is to be told there. Its own partition's timers then take it as an
ordinary job."""
