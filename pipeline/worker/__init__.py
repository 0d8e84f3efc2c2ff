"""Workers: handlers registered by decorator, run with bounded concurrency.

```python
from jobstream._pipeline.worker import JobContext, WorkerApp

app = WorkerApp()

@app.handler("image.render", timeout_s=60)
def render(ctx: JobContext) -> dict:
    ...

@app.handler("data.process")
async def process(ctx: JobContext) -> dict:
    ...
```

A handler returns JSON, ``bytes``, or ``Result(body, content_type)``; the result is kept
on jobs.results (pipeline/worker/results.py). What it logs through :mod:`logging` is kept
per run on jobs.logs (pipeline/worker/capture.py, runlogs.py).

``jobstream worker --app myapp.jobs --type image.render --concurrency 8`` serves them.
"""

from jobstream._pipeline.worker.app import WorkerApp
from jobstream._pipeline.worker.context import JobContext, ParentResult
from jobstream._pipeline.worker.results import Result

__all__ = ["JobContext", "ParentResult", "Result", "WorkerApp"]
