"""The API fuzzed from its own OpenAPI document (schemathesis) against the real service
and broker: whatever a client sends, the answer is never a 5xx, and it is what the
document says (its status codes and bodies)."""

from __future__ import annotations

import os

import httpx
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

from jobstream._connectors.api.app import openapi_document
from jobstream._connectors.api.server import ApiServer
from tests.connectors.api.conftest import ADMIN, TOKENS

EXAMPLES = int(os.environ.get("JOBSTREAM_FUZZ_EXAMPLES", "25"))
"""Per operation: enough to reach every parameter's bounds, short enough for 2 cores;
``JOBSTREAM_FUZZ_EXAMPLES=500`` searches longer."""
TOKEN = os.environ.get("JOBSTREAM_FUZZ_AS", "acme")
"""Whose token the requests carry: an owner's (``acme``) or ``admin``."""


DOCUMENT = openapi_document()
schema = schemathesis.openapi.from_dict(DOCUMENT).exclude(path="/api/v1/stream")
"""Every operation but the event stream, which answers with a stream that never ends
(its contract tests are tests/connectors/api/test_live.py)."""


def test_the_fuzzed_document_is_the_one_served(server: ApiServer) -> None:
    assert httpx.get(f"{server.url}/openapi.json", timeout=30).json() == DOCUMENT


@schema.parametrize()
@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                 HealthCheck.function_scoped_fixture])  # fmt: skip
def test_no_request_makes_a_server_error(case: schemathesis.Case, server: ApiServer) -> None:
    case.call_and_validate(
        base_url=server.url, headers={"Authorization": f"Bearer {TOKENS.get(TOKEN, ADMIN)}"},
        checks=[not_a_server_error, status_code_conformance, content_type_conformance,
                response_schema_conformance],
    )  # fmt: skip
