"""The collector of a long-running process: young collections rarer, startup frozen."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from jobstream._pipeline.runtime.collector import YOUNG_THRESHOLD, tune_collector


@pytest.fixture
def collector_restored() -> Iterator[None]:
    thresholds = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*thresholds)


@pytest.mark.usefixtures("collector_restored")
def test_tuning_freezes_what_is_loaded_and_keeps_the_older_generations() -> None:
    _, middle, old = gc.get_threshold()
    gc.unfreeze()

    tune_collector()

    assert gc.get_threshold() == (YOUNG_THRESHOLD, middle, old)
    assert gc.get_freeze_count() > 0
