"""Two workers of one type on the real broker: each tier's partitions are split between
them, so neither is left without a share of the tier that holds the jobs, and a worker
whose partitions were paused when the group rebalanced fetches what it is given after."""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Iterator

import pytest

from jobstream._pipeline.serde import make_serde
from jobstream._pipeline.topics import PRIORITIES, Topics
from jobstream._pipeline.worker.lane import Lane
from jobstream._pipeline.worker.ports import KafkaClients
from tests.pipeline.worker.executions import execution_requested, submit
from tests.support.waiting import wait_for

JOB_TYPE = "data.process"


@pytest.fixture
def lanes(topics: Topics) -> Iterator[list[Lane]]:
    """Two workers' lanes of one type, not started."""
    _, deserialize = make_serde(topics.settings.schema_registry_url)
    made = [Lane(topics.settings, JOB_TYPE, clients=KafkaClients(topics.settings),
                 worker_id=f"w{i}", prefetch=10, static_member=True,
                 deserialize=deserialize) for i in range(2)]  # fmt: skip
    yield made
    for lane in made:
        lane.close()


def held(members: list[Lane]) -> list[int]:
    """How many partitions each holds, after serving the group's callbacks."""
    for lane in members:
        lane.consumer.poll(0.1)
    return [len(lane.consumer.assignment()) for lane in members]


def join_one_after_the_other(
    lanes: list[Lane], every: int, before_second: Callable[[], object] = lambda: None
) -> None:
    lanes[0].start()
    wait_for(lambda: held(lanes[:1]) == [every], timeout_s=60,
             what="the first worker holding every partition")  # fmt: skip
    before_second()
    lanes[1].start()
    wait_for(lambda: held(lanes) == [every // 2] * 2, timeout_s=60,
             what="the two workers holding half of the partitions each")  # fmt: skip


def test_a_second_worker_gets_half_of_every_tier(topics: Topics, lanes: list[Lane]) -> None:
    every = len(PRIORITIES) * topics.settings.exec_partitions
    join_one_after_the_other(lanes, every)
    time.sleep(1)
    assert held(lanes) == [every // 2] * 2
    for lane in lanes:
        tiers: dict[str, set[int]] = defaultdict(set)
        for tp in lane.consumer.assignment():
            tiers[lane.tier_of[tp.topic]].add(tp.partition)
        shares = {tier: len(tiers[tier]) for tier in PRIORITIES}
        assert shares == dict.fromkeys(PRIORITIES, topics.settings.exec_partitions // 2)


def test_partitions_paused_through_a_rebalance_are_fetched_after_it(
    topics: Topics, lanes: list[Lane]
) -> None:
    every = len(PRIORITIES) * topics.settings.exec_partitions
    # the first pauses everything it holds (as a full tier or a drain does) when the
    # second joins: the rebalance revokes every partition and hands half back to it
    join_one_after_the_other(lanes, every, lambda: lanes[0].update_pauses(fetching=False))
    submit(topics, *[execution_requested(job_type=JOB_TYPE) for _ in range(40)])

    def both_fetched() -> bool:
        for lane in lanes:
            lane.update_pauses(fetching=True)
            lane.fetch(0.1)
        return all(lane.has_buffered for lane in lanes)

    wait_for(both_fetched, timeout_s=30, what="both workers fetching their partitions' jobs")
