"""Views: jobs.intake, jobs.status, jobs.events and jobs.workers folded into local RocksDB
files, with where each result is on jobs.results and each run's log lines on jobs.logs,
indexed for the queries of the HTTP API and the CLI (docs/api.md)."""

from jobstream._connectors.views.fold import SUBMITTED
from jobstream._connectors.views.query import (
    Counts,
    Page,
    commands,
    counts,
    executions,
    list_jobs,
    workers,
)
from jobstream._connectors.views.store import ViewStore
from jobstream._connectors.views.updater import ViewUpdater

__all__ = [
    "SUBMITTED", "Counts", "Page", "ViewStore", "ViewUpdater", "commands", "counts", "executions",
    "list_jobs", "workers",
]
