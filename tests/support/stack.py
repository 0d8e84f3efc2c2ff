"""The whole pipeline as processes on the session broker, for end-to-end test modules."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

import httpx
import pytest

from jobstream._ops.kafka.ports import free_ports
from jobstream._ops.stack import Stack, components
from jobstream._ops.stack import running_stack as running_stack
from jobstream._ops.stack import small_topics as module_topics
from jobstream._pipeline.config import Settings
from jobstream._pipeline.serde import JobStatus
from jobstream._pipeline.status.query import read_statuses
from jobstream._pipeline.topics import Topics
from tests.support.waiting import wait_for

APP = "tests.support.e2e_app"


@contextmanager
def running_pipeline(topics: Topics, home: Path, *, lease_s: float) -> Iterator[Stack]:
    """Timers, status processor, retry router and a data.process worker of the test app."""
    parts = 4  # timers, status processor, retry router, one worker: a port each
    with running_stack(topics.settings, home,
                       components(free_ports(parts), app=APP, job_types=("data.process",),
                                  lease_s=lease_s, heartbeat_s=0.5)) as running:  # fmt: skip
        yield running


Fixture = Callable[..., Any]
Scope = Literal["module", "package"]


def topics_fixture(name: str, scope: Scope = "module") -> Fixture:
    """A module-scoped ``pipeline_topics`` fixture: the module's own topics, prefixed
    ``name`` (``scope="package"``: the package's). In a test module:
    ``pipeline_topics = topics_fixture("e2e")``."""

    @pytest.fixture(scope=scope)
    def pipeline_topics(kafka_bootstrap: str) -> Topics:
        # A fresh prefix on every run: a broker that outlives the session
        # (KAFKA_BOOTSTRAP_SERVERS) still holds the topics of the runs before.
        return module_topics(kafka_bootstrap, f"{name}-{uuid.uuid4().hex[:8]}.")

    return pipeline_topics


def settled(settings: Settings, owner: str, ids: dict[str, str], states: dict[str, set[str]],
            timeout_s: float = 120) -> dict[str, JobStatus]:  # fmt: skip
    """Wait until each job of ``owner`` (label -> id) is in one of its expected states, as
    jobs.status says; their statuses by label."""

    def reached() -> dict[str, JobStatus]:
        found = read_statuses(settings, owner=owner)
        done = all(ids[label] in found and found[ids[label]].state in states[label]
                   for label in ids)  # fmt: skip
        return {label: found[ids[label]] for label in ids} if done else {}

    return wait_for(reached, timeout_s=timeout_s, interval_s=0.5, what=f"states {states}")


def pipeline_fixtures(name: str, *, lease_s: float,
                      scope: Scope = "module") -> tuple[Fixture, Fixture]:  # fmt: skip
    """Module-scoped ``pipeline_topics`` and ``stack`` fixtures: a module's own topics
    (prefixed ``name``) and the pipeline running on them (``scope="package"``: a package's,
    in its conftest.py, with the package in tests/support/scheduling.py). In a test module:
    ``pipeline_topics, stack = pipeline_fixtures("metrics", lease_s=5)``."""

    pipeline_topics = topics_fixture(name, scope)

    @pytest.fixture(scope=scope)
    def stack(pipeline_topics: Topics,
              tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:  # fmt: skip
        with running_pipeline(pipeline_topics, tmp_path_factory.mktemp("stack"),
                              lease_s=lease_s) as running:  # fmt: skip
            yield running

    return pipeline_topics, stack


def api_fixtures() -> tuple[Fixture, Fixture]:
    """Module-scoped ``api`` (the HTTP API with the test tokens, beside the module's
    ``stack``) and ``acme`` (a client with acme's token, per test). In a test module:
    ``api, acme = api_fixtures()``."""
    from jobstream._connectors.api.server import ApiServer
    from tests.connectors.api.conftest import TOKENS, api_settings, client

    @pytest.fixture(scope="module")
    def api(pipeline_topics: Topics, stack: Stack,
            tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiServer]:  # fmt: skip
        with ApiServer(pipeline_topics.settings,
                       api_settings(tmp_path_factory.mktemp("api"))) as up:  # fmt: skip
            yield up

    @pytest.fixture
    def acme(api: ApiServer) -> Iterator[httpx.Client]:
        with client(api, TOKENS["acme"]) as c:
            yield c

    return api, acme


def submit_over_api(client: httpx.Client, body: dict[str, Any]) -> str:
    """POST /api/v1/jobs: the new job's id, its 201 asserted."""
    response = client.post("/api/v1/jobs", json=body)
    assert response.status_code == 201, response.text
    return str(response.json()["job_id"])


def until_ended(client: httpx.Client, job_id: str, *, timeout_s: float = 90) -> dict[str, Any]:
    """GET /api/v1/jobs/{id} once the job has SUCCEEDED or is DEAD_LETTERED."""

    def read() -> dict[str, Any] | None:
        doc: dict[str, Any] = client.get(f"/api/v1/jobs/{job_id}").json()
        return doc if doc.get("state") in ("SUCCEEDED", "DEAD_LETTERED") else None

    return wait_for(read, timeout_s=timeout_s, interval_s=0.3, what=f"job {job_id} to end")
