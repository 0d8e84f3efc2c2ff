"""The demo's worker app: the three demo job types on one :class:`WorkerApp`.

``jobstream worker --app jobstream._ops.demo_jobs.app`` serves them all in one process; for
heterogeneous workers run one process per type, each scaled on its own, with
``--type image.render`` (or ``data.process``, ``report.generate``).

Each handler module exposes ``JOB_TYPE``, ``TIMEOUT_S`` and a plain ``handle(ctx)``,
registered here rather than by a decorator in the module: the modules then need no app
at import time (no import cycle with this one), and tests call the handlers directly.
"""

from __future__ import annotations

from jobstream._ops.demo_jobs import data_process, image_render, report_generate
from jobstream._pipeline.worker import WorkerApp

HANDLER_MODULES = (data_process, image_render, report_generate)
JOB_TYPES = tuple(module.JOB_TYPE for module in HANDLER_MODULES)


def register(app: WorkerApp) -> WorkerApp:
    """Register every demo handler, with its type's default timeout, on ``app``."""
    for module in HANDLER_MODULES:
        app.handler(module.JOB_TYPE, timeout_s=module.TIMEOUT_S)(module.handle)
    return app


app = register(WorkerApp())
