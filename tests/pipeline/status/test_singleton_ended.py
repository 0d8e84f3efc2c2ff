"""The status processor tells a singleton key's timers when the key's job ends."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jobstream._pipeline.model.labels import SINGLETON_LABEL
from jobstream._pipeline.model.params import summarize_params
from jobstream._pipeline.model.records import plain
from jobstream._pipeline.runtime import Output
from jobstream._pipeline.serde import Event
from tests.pipeline.status import events as ev
from tests.pipeline.status.events import T0
from tests.support.status import JOB, StatusDriver, status_driver

pytestmark = pytest.mark.fast


@pytest.fixture
def driver(tmp_path: Path) -> Iterator[StatusDriver]:
    driver = status_driver(tmp_path)
    yield driver
    driver.close()


def ended_records(emits: list[Output]) -> list[dict[str, Any]]:
    return [plain(e.value.data) for e in emits
            if isinstance(e.value, Event) and e.value.name == "SingletonEnded"]  # fmt: skip


def test_a_singleton_job_that_ends_frees_its_key_once(driver: StatusDriver) -> None:
    summary = summarize_params("{}")
    scheduled = ev.lifecycle("SCHEDULED", JOB, scheduled_at_ms=T0, created_at_ms=T0,
                             labels={SINGLETON_LABEL: "report"}, params=summary.params,
                             params_bytes=summary.params_bytes,
                             params_sha256=summary.params_sha256)  # fmt: skip
    run = ev.execution(JOB, epoch=T0)
    driver.step(T0, scheduled, ev.fired(run), ev.outcome("STARTED", run))
    emits = driver.step(T0 + 10, ev.outcome("SUCCEEDED", run))
    (ended,) = ended_records(emits)
    assert ended == {"job_id": JOB, "owner": "tests", "singleton_key": "report",
                     "state": "SUCCEEDED", "ended_at_ms": ended["ended_at_ms"]}  # fmt: skip
    (out,) = [e for e in emits if isinstance(e.value, Event) and e.value.name == "SingletonEnded"]
    assert out.key == b"singleton:tests\x00report"
    assert ended_records(driver.step(T0 + 20, ev.outcome("SUCCEEDED", run))) == []


def test_a_job_without_the_label_sends_nothing(driver: StatusDriver) -> None:
    run = ev.execution(JOB, epoch=T0)
    driver.step(T0, ev.scheduled(JOB), ev.fired(run), ev.outcome("STARTED", run))
    assert ended_records(driver.step(T0 + 10, ev.outcome("SUCCEEDED", run))) == []
