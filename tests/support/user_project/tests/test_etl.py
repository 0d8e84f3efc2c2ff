"""The team's handler, tested with jobstream.testing: in this process, with no broker."""

import jobstream.testing
from jobstream import ParentResult

from myapp.jobs import app


def test_etl_doubles_the_rows_and_reports_its_progress() -> None:
    outcome = jobstream.testing.run(app, "userproject.etl", params={"rows": [1, 2]}, attempt=2)
    assert outcome.state == "SUCCEEDED"
    assert outcome.result == {"rows": [2, 4], "source": "warehouse", "owner": "data-team"}
    assert [report.fraction for report in outcome.progress] == [0.5]


def test_rows_that_are_not_a_list_fail_for_good() -> None:
    parent = ParentResult(job_id="01PARENT", step="extract", outcome="SUCCEEDED",
                          result={"rows": 2}, result_uri=None)
    outcome = jobstream.testing.run(app, "userproject.etl", params={"rows": "1,2"},
                                    parent_results=[parent])
    assert outcome.state == "FAILED"
    assert outcome.error is not None and not outcome.error.retryable
    assert "params.rows must be a list" in outcome.error.message
