"""The worker runtime: handlers registered by decorator, run with bounded concurrency.

```python
from pipeline.worker import JobContext, WorkerApp

app = WorkerApp()

@app.handler("image.render", timeout_s=60)
def render(ctx: JobContext) -> dict:
    ...

@app.handler("data.process")
async def process(ctx: JobContext) -> dict:
    ...
```

``jobstream worker --app myapp.jobs --type image.render --concurrency 8`` serves them.
"""

from pipeline.worker.app import WorkerApp
from pipeline.worker.context import JobContext, ParentResult
from pipeline.worker.results import LocalResultStore, ResultStore

__all__ = ["JobContext", "LocalResultStore", "ParentResult", "ResultStore", "WorkerApp"]
