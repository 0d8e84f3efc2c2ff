"""The view updater in a child process against the broker: the API's process reads the
views it writes, hears of each changed document only once it can read it, and reports a
child that exited or a topic that is missing."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import pytest

from jobstream._connectors.views import list_jobs
from jobstream._connectors.views.process import UpdaterProcess
from jobstream._pipeline.config import Settings
from jobstream._pipeline.errors import JobstreamError
from jobstream._pipeline.jobs import JobClient, JobRequest
from jobstream._pipeline.topics import Topics
from tests.support.waiting import wait_for

DAY_MS = 86_400_000


def test_the_child_folds_and_this_process_reads_what_it_hears_of(
    settings: Settings, topics: Topics, tmp_path: Path
) -> None:
    updater = UpdaterProcess(settings, tmp_path / "views", retention_ms=DAY_MS)
    heard: list[tuple[str, dict[str, Any] | None]] = []
    try:
        store = updater.open()
        assert updater.pid not in (None, os.getpid())
        # what a listener hears, the store shows at that moment
        updater.listeners.append(lambda docs: heard.extend(
            (doc["job_id"], store.doc(doc["job_id"])) for doc in docs))  # fmt: skip
        with JobClient(settings) as client:
            ids = client.submit_many(JobRequest(job_type="data.process", owner="acme")
                                     for _ in range(3))  # fmt: skip
        wait_for(lambda: len(heard) == 3, what="three documents heard of")
        assert sorted(job_id for job_id, _ in heard) == sorted(ids)
        assert all(doc is not None and doc["state"] == "SUBMITTED" for _, doc in heard)
        assert sorted(d["job_id"] for d in list_jobs(store, {"owner": "acme"}).items) == sorted(ids)
        wait_for(updater.caught_up, what="caught up")
        assert updater.stats.folded >= 3 and updater.health() is None

        os.kill(updater.pid or 0, signal.SIGKILL)
        problem = wait_for(updater.health, what="the exit reported")
        assert f"exited (code -{int(signal.SIGKILL)})" in problem
    finally:
        updater.close()


def test_a_missing_topic_is_an_error_naming_it(settings: Settings, tmp_path: Path) -> None:
    updater = UpdaterProcess(settings, tmp_path / "views", retention_ms=DAY_MS)
    with pytest.raises(JobstreamError, match=f"topic {Topics(settings).intake} not found"):
        updater.open()
    updater.close()
