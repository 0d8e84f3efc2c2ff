"""jobstream: a job scheduler that is nothing but Kafka topics.

What a user writes against is here, and only here: ``from jobstream import ...``. A worker
module registers handlers on a :class:`WorkerApp`; a service submits jobs and workflows
with a :class:`JobClient` (or :class:`AsyncJobClient` in asyncio code); a handler ends a
job for good with :class:`NonRetryableError`; a Kafka client of one's own reads the
topics' records with :mod:`jobstream.records`. :mod:`jobstream.testing` runs a handler
in a test without a broker.

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

from jobstream import records
from jobstream._pipeline.config import Settings, load_settings
from jobstream._pipeline.errors import (
    InvalidArgumentError,
    JobstreamError,
    NonRetryableError,
    ValidationError,
)
from jobstream._pipeline.jobs.client import JobClient, SubmissionError, WorkflowSubmission
from jobstream._pipeline.model.job import JobRequest
from jobstream._pipeline.model.retry import RetryPolicy
from jobstream._pipeline.version import VERSION
from jobstream._pipeline.worker.app import WorkerApp
from jobstream._pipeline.worker.context import JobContext, ParentResult
from jobstream._pipeline.worker.results import Result

__version__: str = VERSION
"""The one version, read from the installed distribution (pyproject.toml sets it)."""

__all__ = [
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
