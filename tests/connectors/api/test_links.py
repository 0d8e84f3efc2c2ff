"""One-time approval links: a token names one step of one owner's workflow, and only it."""

from __future__ import annotations

from jobstream._connectors.api.links import holds, job_of, link_token

SECRET = b"s" * 32
JOB = "WDQGSTY0ZPQ6FHT77WC5DM0ZBW"


def test_a_token_holds_for_its_step_only() -> None:
    token = link_token(SECRET, "acme", "report", JOB)
    assert job_of(token) == JOB
    assert holds(SECRET, token, "acme", "report")
    assert not holds(SECRET, token, "bolt", "report"), "another owner's workflow of that id"
    assert not holds(SECRET, token, "acme", "other")
    assert not holds(b"t" * 32, token, "acme", "report"), "another API's secret"
    other = link_token(SECRET, "acme", "report", "W" + JOB[1:-1] + "X")
    assert not holds(SECRET, JOB + "." + other.split(".")[1], "acme", "report")


def test_tokens_of_another_shape_name_no_job() -> None:
    assert job_of("no-dot") is None
    assert job_of(f"{JOB}.short") is None
    assert job_of(f".{'A' * 32}") is None
    assert not holds(SECRET, f"{JOB}.{'A' * 32}", "acme", "report")
