"""`jobstream kafka up|status|down` as a user runs them, on a broker of their own."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient

from jobstream._ops.kafka.ports import free_base_port


def jobstream(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "jobstream", *args], capture_output=True, text=True, timeout=180
    )


@pytest.mark.usefixtures("child_processes")
def test_up_status_down(tmp_path: Path) -> None:
    port = free_base_port(1)
    home = str(tmp_path / "kafka")
    try:
        # The warm-up is make run's (tests/ops/test_make_run.py); here only the broker.
        up = jobstream("kafka", "up", "--home", home, "--port", str(port), "--warm-up", "0s")
        assert up.returncode == 0, up.stderr
        assert f"127.0.0.1:{port}" in up.stdout
        assert "server.log" in up.stdout

        again = jobstream("kafka", "up", "--home", home, "--port", str(port))
        assert again.returncode == 0, again.stderr

        metadata = AdminClient({"bootstrap.servers": f"127.0.0.1:{port}"}).list_topics(timeout=10)
        assert list(metadata.brokers) == [1]

        status = jobstream("kafka", "status", "--home", home)
        assert status.returncode == 0 and "running" in status.stdout
    finally:
        down = jobstream("kafka", "down", "--home", home)
    assert down.returncode == 0 and "stopped nodes: [1]" in down.stdout
    after = jobstream("kafka", "status", "--home", home)
    assert after.returncode == 1 and "stopped" in after.stdout


@pytest.mark.usefixtures("child_processes")
def test_port_in_use_is_named(tmp_path: Path) -> None:
    port = free_base_port(1)
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", port))
        squatter.listen()
        result = jobstream("kafka", "up", "--home", str(tmp_path / "k"), "--port", str(port))
    assert result.returncode == 4
    assert f"port {port} on 127.0.0.1 is in use" in result.stderr
