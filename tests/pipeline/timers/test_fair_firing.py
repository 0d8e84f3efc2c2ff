"""Fair firing on real RocksDB files: when more jobs are due than one batch holds, owners
take turns by weight, nothing fires twice, and the owner schedule survives a restore."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from jobstream._pipeline.config import Settings
from jobstream._pipeline.state.batch import PartitionBatch
from jobstream._pipeline.timers.state import TimerState
from tests.support.jobs import submitted
from tests.support.timers import T0, TimersDriver, executions, timers_driver

DUE = T0 + 1000
BATCH = 100


def owners_fired(emits: list) -> list[str]:
    return [e["spec"]["owner"] for e in executions(emits)]


def load(driver: TimersDriver, counts: dict[str, int]) -> None:
    """Submit ``counts`` jobs per owner, all due at DUE, each owner's in one go."""
    for owner, count in counts.items():
        for _ in range(count):
            driver.step(T0, submitted(now_ms=T0, run_at_ms=DUE, owner=owner))


def make_driver(tmp_path: Path, **settings: object) -> TimersDriver:
    on_the_instant = Settings(fire_lead=0, **settings)  # type: ignore[arg-type]
    return timers_driver(tmp_path, settings=on_the_instant, punctuate_limit=BATCH)


def test_a_small_owner_is_in_the_first_batch_behind_a_flood(tmp_path: Path) -> None:
    driver = make_driver(tmp_path)
    load(driver, {"flood": 1000, "small": 20})
    first = owners_fired(driver.step(DUE))
    assert len(first) == BATCH
    assert Counter(first) == {"flood": 80, "small": 20}
    assert max(i for i, owner in enumerate(first) if owner == "small") < 40  # interleaved
    fired = list(first)
    while batch := owners_fired(driver.step(DUE + 1)):
        fired.extend(batch)
    assert Counter(fired) == {"flood": 1000, "small": 20}
    ids = [e["job_id"] for e in executions(driver.outputs)]
    assert len(ids) == len(set(ids)) == 1020
    driver.close()


def test_weights_from_settings_set_each_owners_share(tmp_path: Path) -> None:
    driver = make_driver(tmp_path, owner_weights={"gold": 3})
    load(driver, {"basic": 300, "gold": 300})
    assert Counter(owners_fired(driver.step(DUE))) == {"gold": 75, "basic": 25}
    driver.close()


def test_jobs_that_fit_one_batch_are_interleaved_too(tmp_path: Path) -> None:
    driver = make_driver(tmp_path)
    load(driver, {"a": 30, "b": 3})
    assert owners_fired(driver.step(DUE))[:6] == ["a", "b", "a", "b", "a", "b"]
    driver.close()


def test_nothing_fires_early_when_the_batch_is_full(tmp_path: Path) -> None:
    driver = make_driver(tmp_path)
    load(driver, {"flood": 500})
    driver.step(T0, submitted(now_ms=T0, run_at_ms=DUE + 60_000, owner="later"))
    fired = []
    while batch := executions(driver.step(DUE)):
        fired.extend(batch)
    assert {e["spec"]["owner"] for e in fired} == {"flood"}
    assert all(e["fired_at_ms"] >= e["scheduled_at_ms"] for e in fired)
    driver.close()


def test_one_owners_flood_fires_earliest_first_in_full_batches(tmp_path: Path) -> None:
    driver = make_driver(tmp_path)
    for offset in range(250):  # submitted latest due first
        driver.step(T0, submitted(now_ms=T0, run_at_ms=DUE - offset, owner="only"))
    batches = []
    while batch := executions(driver.step(DUE)):
        batches.append([e["scheduled_at_ms"] for e in batch])
    assert [len(b) for b in batches] == [BATCH, BATCH, 50]
    fired = [due for batch in batches for due in batch]
    assert fired == sorted(fired) and len(set(fired)) == 250
    driver.close()


def test_the_owner_schedule_is_rebuilt_from_the_changelog(tmp_path: Path) -> None:
    driver = make_driver(tmp_path / "a")
    load(driver, {"flood": 300, "small": 5})
    changelog = driver.changelog[0]
    driver.close()

    restored = make_driver(tmp_path / "b")
    tx = PartitionBatch(restored.store())
    for key, value in changelog:
        restored.processor.restore(tx, key, value)
    tx.commit(len(changelog) - 1)
    state = TimerState(PartitionBatch(restored.store()))
    assert sorted(state.due_owners(DUE)) == ["flood", "small"]
    assert Counter(owners_fired(restored.step(DUE))) == {"flood": 95, "small": 5}
    restored.close()
