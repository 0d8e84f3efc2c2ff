"""The stack supervises its processes: one that dies is started again, with a backoff. Its
processes run on the settings they are given, and a stack that fails to start is stopped."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from jobstream._ops.kafka.ports import free_base_port
from jobstream._ops.stack import Component, RestartBackoff, Stack, components, running_stack
from jobstream._pipeline.config import load_settings
from jobstream._pipeline.errors import JobstreamError
from jobstream._pipeline.topics import Topics
from tests.support.pipeline import process_env
from tests.support.waiting import wait_for


def test_the_backoff_restarts_at_once_then_doubles_and_settles() -> None:
    backoff = RestartBackoff(first_s=1, max_s=4, settle_s=60)
    assert backoff.delay_s("timers", now=0) == 0
    assert [backoff.delay_s("timers", now=t) for t in (1, 3, 7, 13)] == [1, 2, 4, 4]
    assert backoff.delay_s("worker", now=13) == 0, "each component has its own"
    assert backoff.delay_s("timers", now=100) == 0, "a process that ran a while starts at once"


def test_a_killed_process_is_started_again_and_healthy(topics: Topics, tmp_path: Path) -> None:
    stack = Stack(tmp_path, process_env(topics.settings))
    port = free_base_port(1)
    stack.start([Component("retry-router", ("retry-router", "--instance-id", "0"), port)])
    stop = threading.Event()
    exits: list[tuple[str, int]] = []
    supervisor = threading.Thread(
        target=stack.supervise, args=(stop, lambda name, code, _: exits.append((name, code))),
        daemon=True,
    )  # fmt: skip
    supervisor.start()
    try:
        first = stack.processes["retry-router"][1]
        first.kill()
        wait_for(lambda: exits, timeout_s=30, what="the supervisor seeing the exit")
        assert exits == [("retry-router", -9)]
        wait_for(lambda: stack.processes["retry-router"][1].pid != first.pid, timeout_s=30,
                 what="a new retry-router process")  # fmt: skip
        stack.wait_healthy(60)
        assert stack.exited() == {}
    finally:
        stop.set()
        supervisor.join(10)
        stack.stop()


def test_what_no_start_waits_on_runs_nicer_than_the_start_path(topics: Topics,
                                                              tmp_path: Path) -> None:  # fmt: skip
    stack = Stack(tmp_path, process_env(topics.settings))
    chosen = ("timers", "retry-router")
    stack.start([part for part in components(free_base_port(3), job_types=())
                 if part.name in chosen])  # fmt: skip
    try:
        stack.wait_healthy(60)
        niceness = {name: os.getpriority(os.PRIO_PROCESS, stack.processes[name][1].pid)
                    for name in chosen}  # fmt: skip
        own = os.getpriority(os.PRIO_PROCESS, 0)  # what the stack's processes start at
        assert niceness == {"timers": own, "retry-router": max(10, own)}
    finally:
        stack.stop()


SECURED = {
    "bootstrap_servers": "kafka.example:9093", "topic_prefix": "prod.", "replication_factor": 3,
    "security_protocol": "SASL_SSL", "sasl_mechanism": "SCRAM-SHA-512",
    "sasl_username": "timers", "sasl_password": "s3cret", "ssl_ca_location": "/etc/ca.pem",
    "ssl_certificate_location": "/etc/client.pem", "ssl_key_location": "/etc/client.key",
    "ssl_key_password": "k3y", "schema_registry_url": "https://registry.example",
    "librdkafka": {"socket.keepalive.enable": "true"}, "exec_partitions": 3, "fire_lead": 250,
    "fire_lead_most": 4000,
}  # fmt: skip


def test_the_processes_read_back_the_settings_they_are_given(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What the in-process parts read from the environment (the cluster, how to reach it
    and the registry, the topics) reaches a stack's processes; other settings do not."""
    monkeypatch.setenv("JOBSTREAM_API_PORT", "1")
    settings = load_settings(**SECURED)
    env = process_env(settings)
    assert "JOBSTREAM_API_PORT" not in env
    for name in list(os.environ):
        monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    read = load_settings()
    assert read.kafka_config == settings.kafka_config
    fields = [name for name in SECURED if name not in ("sasl_password", "ssl_key_password")]
    assert {f: getattr(read, f) for f in fields} == {f: getattr(settings, f) for f in fields}
    assert read.sasl_password == settings.sasl_password
    assert read.ssl_key_password == settings.ssl_key_password


def test_a_stack_whose_start_fails_is_stopped(monkeypatch: pytest.MonkeyPatch,
                                              tmp_path: Path) -> None:  # fmt: skip
    stopped: list[Stack] = []

    def start(self: Stack, parts: list[Component], **options: object) -> None:
        raise JobstreamError("retry-router exited with 1")

    monkeypatch.setattr(Stack, "start", start)
    monkeypatch.setattr(Stack, "stop", lambda self, timeout_s=30.0: stopped.append(self))
    stack = running_stack(load_settings(), tmp_path, [])
    with pytest.raises(JobstreamError, match="retry-router"), stack:
        pytest.fail("a stack that did not start was yielded")
    assert len(stopped) == 1
