"""The demo's handlers report their stages: from 0 up to 1, each with a message."""

from __future__ import annotations

import dataclasses
from types import ModuleType

import pytest

from jobstream._ops.demo_jobs import data_process, image_render, report_generate
from jobstream._pipeline.worker.progress import ProgressReport
from tests.ops.demo_jobs.conftest import MakeContext


@pytest.mark.parametrize("module", [data_process, image_render, report_generate])
def test_a_demo_handler_reports_its_stages_up_to_done(make_ctx: MakeContext,
                                                      module: ModuleType) -> None:  # fmt: skip
    reports: list[ProgressReport] = []
    ctx = dataclasses.replace(make_ctx(module.JOB_TYPE, {}), progress_sink=reports.append)
    module.handle(ctx)
    fractions = [r.fraction for r in reports]
    assert len(reports) >= 2 and fractions == sorted(fractions)
    assert (fractions[0], fractions[-1]) == (0.0, 1.0)
    assert all(r.message for r in reports)
