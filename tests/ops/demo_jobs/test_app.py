from __future__ import annotations

import pytest

from jobstream._ops.demo_jobs import app as demo
from jobstream._ops.demo_jobs import data_process, image_render, report_generate
from jobstream._ops.demo_jobs.faults import PoisonDemoError, TransientDemoError
from jobstream._pipeline.worker.app import load_app
from tests.ops.demo_jobs.conftest import MakeContext


def test_the_app_serves_every_demo_type_with_its_handler_and_timeout() -> None:
    app = load_app("jobstream._ops.demo_jobs.app")
    assert app is demo.app
    assert sorted(app.job_types) == ["data.process", "image.render", "report.generate"]
    for module in (data_process, image_render, report_generate):
        handler = app.get(module.JOB_TYPE)
        assert handler.func is module.handle
        assert handler.timeout_s == module.TIMEOUT_S
        assert not handler.is_async


@pytest.mark.parametrize("job_type", demo.JOB_TYPES)
def test_every_handler_applies_the_demo_faults(make_ctx: MakeContext, job_type: str) -> None:
    handle = demo.app.get(job_type).func
    for attempt in (1, 2):
        with pytest.raises(TransientDemoError):
            handle(make_ctx(job_type, {"fail_until_attempt": 3}, attempt=attempt))
    assert handle(make_ctx(job_type, {"fail_until_attempt": 3}, attempt=3))
    for attempt in (1, 2, 3):
        with pytest.raises(PoisonDemoError):
            handle(make_ctx(job_type, {"poison": True}, attempt=attempt))
