"""jobstream: a job scheduler that is nothing but Kafka topics.

What a user writes against is here, and only here: ``from jobstream import ...``.

- A worker module registers handlers on a [`WorkerApp`][jobstream.WorkerApp].
- A service submits jobs and workflows with a [`JobClient`][jobstream.JobClient], or an
  [`AsyncJobClient`][jobstream.AsyncJobClient] in asyncio code.
- A handler ends a job for good with [`NonRetryableError`][jobstream.NonRetryableError].
- A Kafka client of one's own reads the topics' records with
  [`jobstream.records`][jobstream.records].
- [`jobstream.testing`][jobstream.testing] runs a handler in a test without a broker, and
  [`jobstream.pytest_plugin`][jobstream.pytest_plugin] gives a test the whole pipeline.

Everything else lives in ``jobstream._pipeline``, ``jobstream._connectors`` and
``jobstream._ops``: internal by name, and free to change between releases
(docs/adr/0005-one-import-name.md).

```python
from jobstream import JobContext, WorkerApp

app = WorkerApp()

@app.handler("report.generate", timeout_s=60)
def generate(ctx: JobContext) -> dict:
    return {"rows": len(ctx.params["rows"])}
```

``jobstream worker --app myapp.jobs --type report.generate`` serves it.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

from jobstream._pipeline.version import VERSION

if TYPE_CHECKING:  # what type checkers and the API reference read; at run time, _PUBLIC
    from jobstream import records as records
    from jobstream._pipeline.config import Settings as Settings
    from jobstream._pipeline.config import load_settings as load_settings
    from jobstream._pipeline.errors import InvalidArgumentError as InvalidArgumentError
    from jobstream._pipeline.errors import JobstreamError as JobstreamError
    from jobstream._pipeline.errors import NonRetryableError as NonRetryableError
    from jobstream._pipeline.errors import ValidationError as ValidationError
    from jobstream._pipeline.jobs.aio import AsyncJobClient as AsyncJobClient
    from jobstream._pipeline.jobs.client import JobClient as JobClient
    from jobstream._pipeline.jobs.outbound import SubmissionError as SubmissionError
    from jobstream._pipeline.jobs.outbound import WorkflowSubmission as WorkflowSubmission
    from jobstream._pipeline.model.job import JobRequest as JobRequest
    from jobstream._pipeline.model.retry import RetryPolicy as RetryPolicy
    from jobstream._pipeline.worker.app import WorkerApp as WorkerApp
    from jobstream._pipeline.worker.context import JobContext as JobContext
    from jobstream._pipeline.worker.context import ParentResult as ParentResult
    from jobstream._pipeline.worker.results import Result as Result

__version__: str = VERSION
"""The one version, read from the installed distribution (pyproject.toml sets it)."""

_PUBLIC = {
    "AsyncJobClient": "jobstream._pipeline.jobs.aio",
    "InvalidArgumentError": "jobstream._pipeline.errors",
    "JobClient": "jobstream._pipeline.jobs.client",
    "JobContext": "jobstream._pipeline.worker.context",
    "JobRequest": "jobstream._pipeline.model.job",
    "JobstreamError": "jobstream._pipeline.errors",
    "load_settings": "jobstream._pipeline.config",
    "NonRetryableError": "jobstream._pipeline.errors",
    "ParentResult": "jobstream._pipeline.worker.context",
    "records": "jobstream.records",
    "Result": "jobstream._pipeline.worker.results",
    "RetryPolicy": "jobstream._pipeline.model.retry",
    "Settings": "jobstream._pipeline.config",
    "SubmissionError": "jobstream._pipeline.jobs.outbound",
    "ValidationError": "jobstream._pipeline.errors",
    "WorkerApp": "jobstream._pipeline.worker.app",
    "WorkflowSubmission": "jobstream._pipeline.jobs.outbound",
}
"""Each public name and the module that defines it (a public module: itself). A name is
imported on first use, so that a process importing one part of jobstream (a handler's child
process, the timers) does not pay for the others: the client and the records load the
Kafka and Avro libraries."""

__all__ = [
    "AsyncJobClient",
    "InvalidArgumentError",
    "JobClient",
    "JobContext",
    "JobRequest",
    "JobstreamError",
    "NonRetryableError",
    "ParentResult",
    "Result",
    "RetryPolicy",
    "Settings",
    "SubmissionError",
    "ValidationError",
    "WorkerApp",
    "WorkflowSubmission",
    "__version__",
    "load_settings",
    "records",
]


def __getattr__(name: str) -> object:
    where = _PUBLIC.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = import_module(where)
    value = module if where == f"{__name__}.{name}" else getattr(module, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_PUBLIC})
