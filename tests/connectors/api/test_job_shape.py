"""The API's job is jobs.status's value plus the API's own fields: a field of JobStatus
missing from JobOut, from the view's document or from /openapi.json fails here, by name.
Pure: no broker, no server."""

from __future__ import annotations

from jobstream._connectors.api.app import openapi_document
from jobstream._connectors.api.models import JobOut
from jobstream._connectors.views.fold import KEPT_BESIDE, apply_status
from jobstream._pipeline.serde import JobStatus
from tests.connectors.views.test_fold import FULL_STATUS

RETYPED = {"state", "updated_at_ms", "created_at_ms", "labels", "params", "params_uri"}
"""JobStatus fields the API's job retypes (SUBMITTED before any status; what the views
always know; the parameters as an object, and served by the API): see JobOut."""


def test_every_jobs_status_field_is_in_the_apis_job() -> None:
    missing = [name for name in JobStatus.model_fields if name not in JobOut.model_fields]
    assert missing == [], f"the API's job lacks the jobs.status fields {missing}"


def test_the_apis_job_keeps_jobs_status_types_and_descriptions() -> None:
    for name, field in JobStatus.model_fields.items():
        if name not in RETYPED:
            shown = JobOut.model_fields[name]
            assert (shown.annotation, shown.description, shown.metadata) == (
                field.annotation, field.description, field.metadata), name  # fmt: skip
    assert JobOut.model_fields["throttled_ms"].description


def test_openapi_documents_every_jobs_status_field() -> None:
    properties = openapi_document()["components"]["schemas"]["JobOut"]["properties"]
    missing = [name for name in JobStatus.model_fields if name not in properties]
    assert missing == [], f"/openapi.json's JobOut lacks {missing}"
    for name in ("waiting_for", "throttled_ms"):
        assert properties[name]["description"] == JobStatus.model_fields[name].description


def test_a_status_folded_into_the_view_is_shown_whole_by_the_api() -> None:
    shown = JobOut(**apply_status(None, FULL_STATUS)).model_dump(mode="json")
    values = FULL_STATUS.model_dump(mode="json")
    differ = [name for name in JobStatus.model_fields
              if name not in KEPT_BESIDE and shown[name] != values[name]]  # fmt: skip
    assert differ == [], f"the API's job does not show the status's {differ}"
    assert (shown["waiting_for"], shown["throttled_ms"]) == (["01JD3W6Q8Z5X7M2K4N9P0R1S2V"], 250)
