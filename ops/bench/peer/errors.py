"""The Celery peer's errors, under jobstream's root so callers catch them alike."""

from __future__ import annotations

from jobstream._pipeline.errors import JobstreamError


class PeerError(JobstreamError):
    """The Celery peer could not run: a process did not start, or died during the run."""

    retryable = False


class PeerInstallError(PeerError):
    """A tool the Celery peer needs could not be installed; the message says which."""
