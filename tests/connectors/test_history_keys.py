"""``jobstream history`` says a job's keys in one line (connectors/cli.py)."""

from __future__ import annotations

from jobstream._connectors.cli import _keys
from jobstream._pipeline.model.keys import shown
from jobstream._pipeline.model.records import DebounceKeep, JobKeys


def test_each_key_is_said_with_what_it_does() -> None:
    keys = shown(JobKeys(concurrency_key="customer-42", concurrency_limit=2, rate_key="crm",
                         rate="100/min", debounce_key="d", debounce_window_ms=5000,
                         debounce_keep=DebounceKeep.FIRST))  # fmt: skip
    assert _keys(keys) == ("concurrency customer-42 (limit 2), rate crm (100/min), "
                           "debounce d (window 5s, keep first)")  # fmt: skip
    assert _keys(shown(JobKeys(singleton_key="s"))) == "singleton s (drop)"
