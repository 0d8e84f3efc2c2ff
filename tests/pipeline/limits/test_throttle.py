"""The throttle of one timer process: every limit that applies gives a token or none is
taken; a process enforces its share of the partitions; a new limit applies at once."""

from __future__ import annotations

from jobstream._pipeline.limits.model import Limit, LimitKey
from jobstream._pipeline.limits.throttle import LimitBoard, Throttle

T0 = 5_000_000
TYPE, PAIR, OWNER = (LimitKey(job_type="render"), LimitKey(owner="acme", job_type="render"),
                     LimitKey(owner="acme"))  # fmt: skip


def admitted(throttle: Throttle, owner: str, job_type: str, now_ms: int, tries: int) -> int:
    return sum(throttle.admit(owner, job_type, now_ms) is None for _ in range(tries))


def test_no_limit_admits_everything() -> None:
    assert admitted(Throttle(), "acme", "render", T0, 1000) == 1000


def test_a_type_limit_holds_every_owner_of_the_type_and_names_itself() -> None:
    throttle = Throttle(LimitBoard([Limit(TYPE, rate=10, burst=2)]))
    assert admitted(throttle, "acme", "render", T0, 1) == 1
    assert admitted(throttle, "other", "render", T0, 1) == 1
    assert throttle.admit("other", "render", T0) == TYPE
    assert admitted(throttle, "acme", "mail", T0, 5) == 5
    assert admitted(throttle, "acme", "render", T0 + 100, 5) == 1


def test_a_pair_limit_leaves_the_owners_other_types_and_other_owners_alone() -> None:
    throttle = Throttle(LimitBoard([Limit(PAIR, rate=1, burst=1)]))
    assert throttle.admit("acme", "render", T0) is None
    assert throttle.admit("acme", "render", T0) == PAIR
    assert admitted(throttle, "acme", "mail", T0, 3) == 3
    assert admitted(throttle, "bob", "render", T0, 3) == 3


def test_no_token_is_taken_when_another_limit_holds_the_job() -> None:
    throttle = Throttle(LimitBoard([Limit(TYPE, rate=1, burst=1), Limit(OWNER, rate=1, burst=5)]))
    assert throttle.admit("acme", "render", T0) is None
    assert throttle.admit("acme", "render", T0) == TYPE
    # The owner's bucket gave one token only: four are left for its other types.
    assert admitted(throttle, "acme", "mail", T0, 10) == 4


def test_a_process_enforces_its_share_of_the_partitions() -> None:
    throttle = Throttle(LimitBoard([Limit(TYPE, rate=60, burst=6)]))
    throttle.set_share(owned=1, partitions=6)  # 10/s and a burst of 1
    assert admitted(throttle, "acme", "render", T0, 10) == 1
    assert admitted(throttle, "acme", "render", T0 + 1000, 100) == 1  # capacity 1
    fired = sum(admitted(throttle, "acme", "render", T0 + 1000 + ms, 10)
                for ms in range(100, 10_001, 100))  # fmt: skip
    assert fired == 100  # 10 s at 10/s
    throttle.set_share(owned=6, partitions=6)  # the whole limit: 60/s, a burst of 6
    assert admitted(throttle, "acme", "render", T0 + 12_000, 100) == 1  # earned at 10/s
    assert admitted(throttle, "acme", "render", T0 + 12_100, 100) == 6


def test_a_changed_limit_applies_at_the_next_firing() -> None:
    board = LimitBoard([Limit(TYPE, rate=1, burst=1)])
    throttle = Throttle(board)
    assert admitted(throttle, "acme", "render", T0, 10) == 1
    board.set(Limit(TYPE, rate=1000, burst=1))
    assert admitted(throttle, "acme", "render", T0 + 10, 10) == 0  # earned at 1/s until now
    assert admitted(throttle, "acme", "render", T0 + 11, 10) == 1  # then one per ms
    board.clear(TYPE)
    assert admitted(throttle, "acme", "render", T0 + 10, 10) == 10
