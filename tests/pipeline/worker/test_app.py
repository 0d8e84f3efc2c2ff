"""Registering handlers, and loading the app a worker serves from a module path."""

from __future__ import annotations

import pytest

from jobstream._pipeline.errors import ConfigurationError
from jobstream._pipeline.worker import JobContext, WorkerApp
from jobstream._pipeline.worker.app import load_app
from tests.pipeline.worker import sample_app


def test_handlers_register_by_decorator_sync_and_async() -> None:
    app = WorkerApp()

    @app.handler("a.sync", timeout_s=5)
    def sync(ctx: JobContext) -> int:
        return 1

    @app.handler("a.async")
    async def asynchronous(ctx: JobContext) -> int:
        return 2

    assert app.job_types == ("a.sync", "a.async")
    assert "a.sync" in app and "missing" not in app
    assert app.get("a.sync").func is sync and not app.get("a.sync").is_async
    assert app.get("a.sync").timeout_s == 5
    assert app.get("a.async").is_async and app.get("a.async").timeout_s is None


def test_registration_mistakes_are_configuration_errors() -> None:
    app = WorkerApp()
    app.handler("dup")(lambda ctx: None)
    with pytest.raises(ConfigurationError, match="already registered"):
        app.handler("dup")(lambda ctx: None)
    with pytest.raises(ConfigurationError, match="timeout_s"):
        app.handler("t", timeout_s=0)
    with pytest.raises(ConfigurationError):
        app.handler(" padded ")
    with pytest.raises(ConfigurationError, match="no handler for job type 'nope'"):
        app.get("nope")


def test_load_app_by_module_or_module_and_attribute() -> None:
    assert load_app("tests.pipeline.worker.sample_app") is sample_app.app
    assert load_app("tests.pipeline.worker.sample_app:other") is sample_app.other


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("tests.pipeline.worker.no_such_module", "cannot import"),
        ("tests.pipeline.worker.sample_app:missing", "must be a WorkerApp, found nothing"),
        ("tests.pipeline.worker.sample_app:not_an_app", "must be a WorkerApp, found str"),
        (":app", "expected 'module'"),
    ],
)
def test_load_app_names_what_is_wrong(target: str, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        load_app(target)
