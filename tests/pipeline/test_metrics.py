from __future__ import annotations

import time
import urllib.error
import urllib.request

import pytest

from jobstream._pipeline import metrics
from jobstream._pipeline.config import Settings
from jobstream._pipeline.errors import ConfigurationError


def get(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def test_health_follows_the_loop_heartbeat_and_metrics_are_served() -> None:
    server = metrics.serve(0, host="127.0.0.1")
    port = server.server_address[1]
    metrics.LOOP_HEARTBEAT.clear()  # loops that earlier tests ran in this process
    try:
        beat = metrics.LOOP_HEARTBEAT.labels("test-loop")
        beat.set(time.time())
        assert get(port, "/healthz") == (200, "ok\n")

        beat.set(time.time() - metrics.STALE_AFTER_S - 1)
        assert get(port, "/healthz") == (503, "stale: test-loop\n")

        metrics.FIRED.labels("data.process").inc(3)
        status, body = get(port, "/metrics")
        assert status == 200
        assert 'jobstream_fired_total{job_type="data.process"}' in body
        assert get(port, "/nothing")[0] == 404
    finally:
        metrics.LOOP_HEARTBEAT.remove("test-loop")
        server.shutdown()


def test_a_health_check_that_reports_a_problem_makes_the_process_unhealthy() -> None:
    server = metrics.serve(0, host="127.0.0.1")
    port = server.server_address[1]
    metrics.LOOP_HEARTBEAT.clear()
    problem: list[str | None] = [None]
    metrics.add_health_check("test-runner", lambda: problem[0])
    try:
        assert get(port, "/healthz") == (200, "ok\n")
        problem[0] = "no partitions for 61 s"
        assert get(port, "/healthz") == (503, "test-runner: no partitions for 61 s\n")
        metrics.remove_health_check("test-runner")
        assert get(port, "/healthz") == (200, "ok\n")
    finally:
        metrics.remove_health_check("test-runner")
        server.shutdown()


def test_the_port_binds_the_loopback_interface_by_default() -> None:
    server = metrics.serve(0)
    try:
        assert server.server_address[0] == "127.0.0.1"
    finally:
        server.shutdown()
    assert Settings().metrics_host == "127.0.0.1"


def test_a_port_already_taken_stops_the_process_naming_the_port() -> None:
    taken = metrics.serve(0)
    port = taken.server_address[1]
    try:
        with pytest.raises(ConfigurationError, match=rf"127\.0\.0\.1:{port}.*--metrics-port"):
            metrics.serve(port)
    finally:
        taken.shutdown()
