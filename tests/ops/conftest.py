"""The wheel installed in a virtualenv of its own, a broker it started, and the jobstream
services of docker-compose.yml running from it: one of each per session, shared by
tests/ops/test_wheel.py."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from jobstream._connectors.api.auth import hash_token
from jobstream._ops.kafka.ports import free_base_port
from jobstream._ops.stack import Stack
from tests.support.compose import LOOPBACK, ComposeRun, jobstream_services, localize
from tests.support.tools import unavailable
from tests.support.wheel import Installed, build_wheel, install

API_TOKEN = "compose-admin-token"


@pytest.fixture(scope="session")
def installed_wheel(tmp_path_factory: pytest.TempPathFactory, child_processes: None) -> Installed:
    work = tmp_path_factory.mktemp("wheel")
    return install(build_wheel(work), work)


@pytest.fixture(scope="session")
def wheel_broker(installed_wheel: Installed) -> Iterator[str]:
    """The bootstrap of a broker that the wheel's ``jobstream kafka up`` started."""
    home, port = str(installed_wheel.home / "kafka"), free_base_port(1)
    up = installed_wheel.run("kafka", "up", "--home", home, "--port", str(port),
                             "--warm-up", "0s", timeout_s=240)  # fmt: skip
    try:
        if up.returncode != 0:
            unavailable(f"jobstream kafka up (from the wheel) exited {up.returncode}: {up.stderr}")
        yield f"{LOOPBACK}:{port}"
    finally:
        installed_wheel.run("kafka", "down", "--home", home)


@pytest.fixture(scope="session")
def compose_run(installed_wheel: Installed, wheel_broker: str,
                tmp_path_factory: pytest.TempPathFactory) -> Iterator[ComposeRun]:  # fmt: skip
    """One-shot services first (compose starts the others once ``topics`` has completed)."""
    env = {"JOBSTREAM_BOOTSTRAP_SERVERS": wheel_broker, "JOBSTREAM_METRICS_HOST": LOOPBACK,
           "JOBSTREAM_API_TOKENS": f'{{"{hash_token(API_TOKEN)}": "compose"}}',
           "JOBSTREAM_API_ADMIN_TOKENS": hash_token(API_TOKEN)}  # fmt: skip
    work = tmp_path_factory.mktemp("compose")
    services = localize(jobstream_services(), work, env)
    exits = {}
    for one_shot in (s for s in services if s.one_shot):
        done = installed_wheel.run(*one_shot.args, env=dict(one_shot.env), timeout_s=120)
        assert done.returncode == 0, f"{one_shot.name}: {done.stderr}"
        exits[one_shot.name] = done.returncode
    stack = Stack(work, installed_wheel.env(), program=(installed_wheel.jobstream,),
                  cwd=installed_wheel.home)  # fmt: skip
    try:
        stack.start([s.component() for s in services if not s.one_shot], timeout_s=240)
        yield ComposeRun(installed_wheel, wheel_broker, API_TOKEN, tuple(services), exits,
                         stack)  # fmt: skip
    finally:
        stack.stop()
