"""``jobstream quotas`` on the real broker: set, list, replace and clear, and a bad value
refused naming it before anything is written."""

from __future__ import annotations

import orjson

from jobstream._pipeline.quotas.model import Quota
from jobstream._pipeline.quotas.topic import read_quotas
from jobstream._pipeline.topics import Topics
from tests.support.cli import command, run


def test_set_list_replace_and_clear(topics: Topics) -> None:
    quotas = command(topics, "quotas")
    assert "owner=acme: submit_rate 200, pending_jobs 50000\n" in quotas(
        "set", "--owner", "acme", "--submit-rate", "200/s", "--pending-jobs", "50000")
    quotas("set", "--owner", "bolt", "--job-types", "3", "--streams", "0", "--by", "ann")
    lines = quotas("list", "--json").splitlines()  # librdkafka's log lines go there too
    listed = [orjson.loads(line) for line in lines if line.startswith('{"owner"')]
    setters = [entry.pop("set_by") for entry in listed]
    assert listed == [
        {"owner": "acme", "submit_rate": 200.0, "pending_jobs": 50000},
        {"owner": "bolt", "job_types": 3, "streams": 0},
    ]
    assert setters[0].startswith("cli:") and setters[1] == "ann", setters
    quotas("set", "--owner", "acme", "--submit-burst", "10")  # replaces acme's whole override
    quotas("clear", "--owner", "bolt")
    assert read_quotas(topics.settings) == {"acme": Quota(submit_burst=10)}


def test_a_bad_value_is_refused_naming_it(topics: Topics) -> None:
    for args, named in ((["--streams", "-1"], "streams"), (["--submit-rate", "fast"], "rate"),
                        ([], "quota")):  # fmt: skip
        result = run(topics, "quotas", "set", "--owner", "acme", *args)
        assert result.exit_code != 0
        assert f"{named}: " in str(result.exception or result.output)
    assert read_quotas(topics.settings) == {}
