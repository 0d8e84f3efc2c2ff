"""A node's server.properties: the settings jobstream picks, then the user's own."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobstream._ops.kafka.cluster import EXTRA_PROPERTIES_ENV, Layout, server_properties
from jobstream._pipeline.errors import BrokerError


def _properties(tmp_path: Path) -> dict[str, str]:
    layout = Layout.plan(nodes=1, port=24000, heap_mb=512)
    lines = server_properties(layout, layout.nodes[0], tmp_path).splitlines()
    keys = [line.split("=", 1)[0] for line in lines]
    assert len(keys) == len(set(keys)), "a key written twice"
    return dict(line.split("=", 1) for line in lines)


def test_the_users_properties_come_last_and_win(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert _properties(tmp_path)["num.partitions"] == "1"
    monkeypatch.setenv(EXTRA_PROPERTIES_ENV, "num.partitions=3  num.io.threads=2")
    properties = _properties(tmp_path)
    assert properties["num.partitions"] == "3"
    assert properties["num.io.threads"] == "2"


@pytest.mark.parametrize("pair", ["num.io.threads", "=2"])
def test_a_pair_without_a_key_or_a_value_stops_the_start(
    tmp_path: Path, pair: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(EXTRA_PROPERTIES_ENV, f"num.partitions=3 {pair}")
    with pytest.raises(BrokerError, match=f"{EXTRA_PROPERTIES_ENV}: '{pair}' is not key=value"):
        _properties(tmp_path)
