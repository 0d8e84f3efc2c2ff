"""A worker module of the team's own, beside its pipeline, ops and connectors packages."""

from jobstream import JobContext, NonRetryableError, WorkerApp

from connectors import SOURCE
from ops import OWNER
from pipeline.etl import transform

app = WorkerApp()


@app.handler("userproject.etl", timeout_s=30)
def etl(ctx: JobContext) -> dict[str, object]:
    rows = ctx.params.get("rows")
    if not isinstance(rows, list):
        raise NonRetryableError("params.rows must be a list of numbers")
    ctx.progress(0.5, "transforming")
    return {"rows": transform(rows), "source": SOURCE, "owner": OWNER}
