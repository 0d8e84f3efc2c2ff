"""What the origin serves without a token, checked on the app itself (no broker): every
response carries the security headers, and /docs loads only this origin's files."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient

from jobstream._connectors.api.app import create_app
from jobstream._connectors.api.headers import HEADERS


@pytest.fixture(scope="module")
def client() -> TestClient:
    return TestClient(create_app(None))


@pytest.mark.parametrize("path", [
    "/", "/static/app.js", "/docs", "/docs/start.js", "/docs/assets/swagger-ui-bundle.js",
    "/openapi.json", "/no/such/page", "/static/no-such-file.js",
])  # fmt: skip
def test_every_response_carries_the_security_headers(client: TestClient, path: str) -> None:
    reply = client.get(path)
    for name, value in HEADERS.items():
        assert reply.headers.get(name) == value, (path, name)


def test_the_policy_allows_this_origin_only_and_no_frame() -> None:
    policy = dict(part.split(" ", 1) for part in HEADERS["Content-Security-Policy"].split("; "))
    assert policy["script-src"] == "'self'" and policy["style-src"] == "'self'"
    assert policy["frame-ancestors"] == "'none'" and HEADERS["X-Frame-Options"] == "DENY"
    assert not any("unsafe" in value or "http" in value for value in policy.values())


def test_the_docs_page_loads_only_files_of_this_origin(client: TestClient) -> None:
    page = client.get("/docs")
    assert page.status_code == 200
    sources = re.findall(r'(?:src|href)="([^"]+)"', page.text)
    assert sources and all(source.startswith("/") for source in sources), sources
    assert "<script>" not in page.text  # no inline script: the policy would refuse it
    for source in sources:
        assert client.get(source).status_code == 200, source
    assert client.get("/redoc").status_code == 404
    assert client.get("/openapi.json").json()["info"]["title"] == "jobstream"
