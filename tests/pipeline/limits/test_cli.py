"""``jobstream limits`` on the real broker: set, list, replace and clear, and a bad rate
refused naming it before anything is written."""

from __future__ import annotations

import orjson

from jobstream._pipeline.limits.model import Limit, LimitKey
from jobstream._pipeline.limits.topic import read_limits
from jobstream._pipeline.topics import Topics
from tests.support.cli import command, run


def test_set_list_replace_and_clear(topics: Topics) -> None:
    """Each limit listed with who set it (``--by``, else the shell's user@host)."""
    limits = command(topics, "limits")
    assert "type=image.render: 50/s, burst 25\n" in limits("set", "--type", "image.render",
                                                           "--rate", "50/s")  # fmt: skip
    limits("set", "--owner", "acme", "--type", "image.render", "--rate", "120/m", "--burst", "3",
           "--by", "ann")  # fmt: skip
    lines = limits("list", "--json").splitlines()  # librdkafka's log lines go there too
    listed = [orjson.loads(line) for line in lines if '"rate_per_s"' in line]
    setters = [entry.pop("set_by") for entry in listed]
    assert listed == [
        {"owner": "acme", "job_type": "image.render", "rate_per_s": 2.0, "burst": 3},
        {"owner": None, "job_type": "image.render", "rate_per_s": 50.0, "burst": 25},
    ]
    assert setters[0] == "ann" and setters[1].startswith("cli:"), setters
    limits("set", "--type", "image.render", "--rate", "10/s")
    limits("clear", "--owner", "acme", "--type", "image.render")
    assert read_limits(topics.settings) == [Limit(LimitKey(job_type="image.render"), 10.0, 5)]


def test_a_bad_rate_is_refused_naming_it(topics: Topics) -> None:
    result = run(topics, "limits", "set", "--type", "a.b", "--rate", "fast")
    assert result.exit_code != 0
    assert "rate: must be a number per s, min or h" in str(result.exception or result.output)
    assert read_limits(topics.settings) == []
