"""Two workers of one type on the real broker: each tier's partitions are split between
them, so neither is left without a share of the tier that holds the jobs."""

from __future__ import annotations

import time
from collections import defaultdict

from pipeline.serde import make_serde
from pipeline.topics import PRIORITIES, Topics
from pipeline.worker.lane import Lane
from tests.support.waiting import wait_for

JOB_TYPE = "data.process"


def test_a_second_worker_gets_half_of_every_tier(topics: Topics) -> None:
    _, deserialize = make_serde(topics.settings.schema_registry_url)
    lanes = [Lane(topics.settings, JOB_TYPE, worker_id=f"w{i}", prefetch=10, static_member=True,
                  deserialize=deserialize) for i in range(2)]  # fmt: skip
    every = len(PRIORITIES) * topics.settings.exec_partitions

    def held(members: list[Lane]) -> list[int]:
        for lane in members:
            lane.consumer.poll(0.1)
        return [len(lane.consumer.assignment()) for lane in members]

    try:
        lanes[0].start()
        wait_for(lambda: held(lanes[:1]) == [every], timeout_s=60, what="the first worker "
                 "holding every partition")  # fmt: skip
        lanes[1].start()
        wait_for(lambda: held(lanes) == [every // 2] * 2, timeout_s=60,
                 what="the two workers holding half of the partitions each")  # fmt: skip
        time.sleep(1)
        assert held(lanes) == [every // 2] * 2
        for lane in lanes:
            tiers: dict[str, set[int]] = defaultdict(set)
            for tp in lane.consumer.assignment():
                tiers[lane.tier_of[tp.topic]].add(tp.partition)
            shares = {tier: len(tiers[tier]) for tier in PRIORITIES}
            assert shares == dict.fromkeys(PRIORITIES, topics.settings.exec_partitions // 2)
    finally:
        for lane in lanes:
            lane.close()
