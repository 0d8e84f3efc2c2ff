"""A real API server (uvicorn on a free loopback port) on the test's own topics."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from jobstream._connectors.api.auth import hash_token
from jobstream._connectors.api.server import ApiServer
from jobstream._connectors.api.settings import ApiSettings
from jobstream._pipeline.config import Settings
from jobstream._pipeline.topics import Topics

TOKENS = {"acme": "acme-secret", "bolt": "bolt-secret"}
ADMIN = "root-secret"
ADMIN_NAME = "ops-root"
"""The admin token's name: the actor its commands record (``api:admin:ops-root``)."""


def api_settings(tmp_path: Path, **overrides: object) -> ApiSettings:
    return ApiSettings(
        api_port=0,
        api_tokens={hash_token(token): owner for owner, token in TOKENS.items()},
        api_admin_tokens={hash_token(ADMIN): ADMIN_NAME},
        view_dir=tmp_path / "views",
        **overrides,  # type: ignore[arg-type]
    )


@pytest.fixture
def server(settings: Settings, topics: Topics, tmp_path: Path) -> Iterator[ApiServer]:
    with ApiServer(settings, api_settings(tmp_path)) as running:
        yield running


def client(server: ApiServer, token: str | None) -> httpx.Client:
    headers = {} if token is None else {"Authorization": f"Bearer {token}"}
    return httpx.Client(base_url=server.url, headers=headers, timeout=30)


@pytest.fixture
def acme(server: ApiServer) -> Iterator[httpx.Client]:
    with client(server, TOKENS["acme"]) as c:
        yield c


@pytest.fixture
def bolt(server: ApiServer) -> Iterator[httpx.Client]:
    with client(server, TOKENS["bolt"]) as c:
        yield c


@pytest.fixture
def admin(server: ApiServer) -> Iterator[httpx.Client]:
    with client(server, ADMIN) as c:
        yield c


@pytest.fixture
def anonymous(server: ApiServer) -> Iterator[httpx.Client]:
    with client(server, None) as c:
        yield c
