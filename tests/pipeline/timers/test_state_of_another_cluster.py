"""Timers started on a state directory written against another cluster fire at once.

The broker's data is wiped (every topic deleted and made again: new topic ids, offsets
from zero) while the timers are down, and their state directory stays: every store's
checkpoint lies past the end of a changelog that starts over. The stores are rebuilt at
once rather than after waiting for each changelog's end to pass the checkpoint.
"""

from __future__ import annotations

import time
from pathlib import Path

from jobstream._pipeline.clock import now_ms
from jobstream._pipeline.kafka.identity import TopicIdentity, topic_identity
from jobstream._pipeline.runtime.options import processor_group
from jobstream._pipeline.state.store import PartitionStore
from jobstream._pipeline.timers.processor import TIMER_OPTIONS, timer_runner
from jobstream._pipeline.topics import Topics
from tests.support.jobs import submitted
from tests.support.pipeline import Executions, in_thread, produce
from tests.support.topics import recreate
from tests.support.waiting import wait_for


def checkpoints(root: Path, partitions: int) -> dict[int, tuple[int | None, TopicIdentity | None]]:
    """Each store's checkpoint, and the identity of the changelog it belongs to."""
    found = {}
    for p in range(partitions):
        store = PartitionStore(root / str(p))
        found[p] = store.changelog_offset, store.changelog_identity
        store.close()
    return found


def test_timers_on_the_state_of_a_wiped_cluster_fire_without_waiting_for_its_changelogs(
    topics: Topics, tmp_path: Path
) -> None:
    settings = topics.settings
    options = TIMER_OPTIONS.evolve(instance_id="a", state_dir=tmp_path / "state")
    executions = Executions(settings)
    with in_thread(timer_runner(settings, options)):
        # Due past the fire lead: an entry fired in the transaction that put it leaves the
        # changelog (and so the store's checkpoint) untouched.
        due = now_ms() + 3_000
        produce(settings, topics.intake, [submitted(run_at_ms=due) for _ in range(30)])
        wait_for(lambda: executions.poll() >= 30, timeout_s=60, what="30 executions")
    executions.close()
    root = options.store_root(processor_group(settings.topic_prefix, "timers"))
    before = topic_identity(settings.kafka_config, topics.timers_changelog)
    kept = checkpoints(root, settings.timer_partitions)
    assert all(offset is not None and identity == before for offset, identity in kept.values())

    recreate(topics, [spec.name for spec in topics.specs()])
    executions = Executions(settings)
    started = time.monotonic()
    with in_thread(timer_runner(settings, options)):
        produce(settings, topics.intake, [submitted(run_at_ms=now_ms())])
        wait_for(lambda: executions.poll() >= 1, timeout_s=120, what="the first execution")
        first_fired_s = time.monotonic() - started
    executions.close()
    # Waiting for each stale changelog's end, as the timers once did, took 15 s a
    # partition: 45 s here before the first firing.
    assert first_fired_s < 30, f"the first job fired {first_fired_s:.1f} s after the start"
    now = topic_identity(settings.kafka_config, topics.timers_changelog)
    assert now is not None and now != before
    rebuilt = checkpoints(root, settings.timer_partitions)
    assert all(identity == now for _, identity in rebuilt.values()), rebuilt
