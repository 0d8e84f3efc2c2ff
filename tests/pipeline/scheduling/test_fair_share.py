"""Weighted fair sharing of a batch: shares, interleaving, and queues that run dry."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import pytest

from jobstream._pipeline.scheduling.fair_share import fair_batch, group_by, weight_of

EQUAL = weight_of({})


def test_equal_owners_alternate_rather_than_go_in_turn() -> None:
    batch = fair_batch({"a": ["a1", "a2", "a3"], "b": ["b1", "b2", "b3"]}, EQUAL, 6)
    assert batch == ["a1", "b1", "a2", "b2", "a3", "b3"]


def test_a_flood_gives_a_small_owner_its_whole_queue_at_the_front() -> None:
    flood = (f"a{i}" for i in range(1_000_000))
    batch = fair_batch({"a": flood, "b": [f"b{i}" for i in range(100)]}, EQUAL, 5000)
    assert len(batch) == 5000
    positions = [i for i, item in enumerate(batch) if item.startswith("b")]
    assert len(positions) == 100 and max(positions) < 200


def test_weights_set_the_shares() -> None:
    weight = weight_of({"gold": 3, "*": 1})
    queues = {"gold": iter(["g"] * 1000), "x": iter(["x"] * 1000), "y": iter(["y"] * 1000)}
    counts = Counter(fair_batch(queues, weight, 500))
    assert counts == {"g": 300, "x": 100, "y": 100}


def test_a_dry_queue_leaves_its_share_to_the_others() -> None:
    batch = fair_batch({"a": ["a"] * 10, "b": ["b"] * 2, "c": ["c"] * 10}, EQUAL, 20)
    assert Counter(batch) == {"a": 9, "b": 2, "c": 9}


def test_queues_are_pulled_only_as_far_as_the_batch_needs() -> None:
    pulled = []

    def queue(name: str) -> Iterator[str]:
        for _ in range(1000):
            pulled.append(name)
            yield name

    fair_batch({"a": queue("a"), "b": queue("b")}, EQUAL, 10)
    assert Counter(pulled) == {"a": 5, "b": 5}


def test_order_within_a_queue_is_kept_and_ties_go_to_the_first_queue() -> None:
    batch = fair_batch({"b": [1, 2], "a": [10, 20]}, EQUAL, 3)
    assert batch == [1, 10, 2]


def test_no_room_or_no_queues_gives_nothing() -> None:
    assert fair_batch({"a": [1]}, EQUAL, 0) == []
    assert fair_batch({}, EQUAL, 10) == []


def test_a_weight_that_is_not_positive_is_refused_naming_the_owner() -> None:
    with pytest.raises(ValueError, match="'a'"):
        fair_batch({"a": [1]}, weight_of({"a": 0}), 1)


def test_default_weight_is_the_star_entry_or_one() -> None:
    assert weight_of({"*": 2.5})("anyone") == 2.5
    assert weight_of({})("anyone") == 1.0


def test_group_by_keeps_order_within_and_across_groups() -> None:
    groups = group_by(["b1", "a1", "b2", "a2"], lambda s: s[0])
    assert list(groups.items()) == [("b", ["b1", "b2"]), ("a", ["a1", "a2"])]
