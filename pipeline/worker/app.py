"""Handlers registered by decorator, and the ``--app`` module that holds them.

A worker process imports one module (``--app myapp.jobs``) whose ``app`` attribute (or the
attribute named after a colon, ``myapp.jobs:registry``) is a :class:`WorkerApp`. The
registry is plain data: importing the module registers the handlers and starts nothing,
so the same module serves tests, the CLI and any embedding program.
"""

from __future__ import annotations

import importlib
import inspect
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from jobstream._pipeline.errors import ConfigurationError
from jobstream._pipeline.worker.context import JobContext

if TYPE_CHECKING:  # a handler's child process imports this module, not the records
    from jobstream._pipeline.model.records import ExecutionRequested

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT_S = 300.0
"""Timeout of an attempt when neither the job nor its handler sets one."""

HandlerFunc = Callable[[JobContext], Any]
F = TypeVar("F", bound=HandlerFunc)


@dataclass(frozen=True, slots=True)
class Handler:
    job_type: str
    func: HandlerFunc
    timeout_s: float | None
    """The job type's default timeout; a job's own ``spec.timeout_ms`` takes precedence."""
    is_async: bool
    """Coroutine functions run on the worker's event loop, others on its threads."""

    def timeout_for(self, execution: ExecutionRequested) -> float:
        """Seconds this attempt may run: ``spec.timeout_ms``, else the handler's, else 300.

        The job's own timeout wins because the schema defines ``timeout_ms`` as "null takes
        the job type's default", and the handler's ``timeout_s`` is that default.
        """
        timeout_ms = execution.spec.timeout_ms
        if timeout_ms:
            return timeout_ms / 1000
        return self.timeout_s if self.timeout_s is not None else DEFAULT_TIMEOUT_S


class WorkerApp:
    """A registry of handlers, one per job type."""

    def __init__(self) -> None:
        self._handlers: dict[str, Handler] = {}
        self.source: str | None = None
        """The ``--app`` target :func:`load_app` imported it by: how a handler's child
        process (``--isolation process``) imports it again. None for an app not loaded so."""

    def handler(self, job_type: str, *, timeout_s: float | None = None) -> Callable[[F], F]:
        """Register the decorated function (sync or ``async def``) for ``job_type``."""
        if not job_type or job_type != job_type.strip():
            raise ConfigurationError(f"handler job type must be a non-empty name: {job_type!r}")
        if timeout_s is not None and timeout_s <= 0:
            raise ConfigurationError(f"{job_type}: timeout_s must be positive, got {timeout_s}")

        def register(func: F) -> F:
            if job_type in self._handlers:
                raise ConfigurationError(f"a handler for {job_type!r} is already registered")
            self._handlers[job_type] = Handler(
                job_type, func, timeout_s, inspect.iscoroutinefunction(func)
            )
            return func

        return register

    @property
    def job_types(self) -> tuple[str, ...]:
        return tuple(self._handlers)

    def get(self, job_type: str) -> Handler:
        try:
            return self._handlers[job_type]
        except KeyError:
            raise ConfigurationError(
                f"no handler for job type {job_type!r}; the app has {sorted(self._handlers)}"
            ) from None

    def __contains__(self, job_type: object) -> bool:
        return job_type in self._handlers


def load_app(target: str) -> WorkerApp:
    """Import ``module`` or ``module:attribute`` and return the WorkerApp it names."""
    module_name, _, attribute = target.partition(":")
    attribute = attribute or "app"
    if not module_name:
        raise ConfigurationError(f"--app: expected 'module' or 'module:attribute', got {target!r}")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigurationError(f"--app: cannot import {module_name!r}: {exc}") from exc
    app = getattr(module, attribute, None)
    if not isinstance(app, WorkerApp):
        found = "nothing" if app is None else type(app).__name__
        raise ConfigurationError(
            f"--app: {module_name}.{attribute} must be a WorkerApp, found {found}"
        )
    app.source = f"{module_name}:{attribute}"
    return app
