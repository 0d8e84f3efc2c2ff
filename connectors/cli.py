"""The connectors' commands: ``jobstream api``, the queries on it, ``backfill`` and ``replay``.

``jobs list``, ``history``, ``result``, ``logs``, ``workers`` and ``backfill`` call the HTTP API
(``JOBSTREAM_API_URL``,
``JOBSTREAM_API_TOKEN``), so they see what the token's owner may see and nothing more;
their tables stay readable at 80 columns.
"""

from __future__ import annotations

import logging
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import orjson
import typer
from rich import box
from rich.console import Console
from rich.table import Table

from jobstream._connectors.api.auth import hash_token
from jobstream._connectors.api.settings import ApiSettings, load_api_settings
from jobstream._pipeline import metrics
from jobstream._pipeline.cli_options import MetricsPortOption
from jobstream._pipeline.clock import instant_of, iso_ms
from jobstream._pipeline.config import load_settings
from jobstream._pipeline.durations import format_duration
from jobstream._pipeline.errors import ValidationError
from jobstream._pipeline.jobs.backfill import OF_LABEL
from jobstream._pipeline.jobs.cli import refusals
from jobstream._pipeline.kafka.clock_watch import watch_clock
from jobstream._pipeline.model.lifecycle import TERMINAL_STATES
from jobstream._pipeline.replay.cli import progress_bar, replay_status, replay_timers
from jobstream._pipeline.scheduling.backfill import check_rate, parse_instant_ms
from jobstream._pipeline.signals import stop_on_signals
from jobstream._pipeline.worker.runlogs import format_line

log = logging.getLogger(__name__)

EXIT_API = 6
"""The API answered with an error (the message is printed)."""



def _console() -> Console:
    return Console()  # made per command: the terminal's width is read when it runs


def api(
    host: str | None = typer.Option(None, "--host", help="Default JOBSTREAM_API_HOST."),
    port: int | None = typer.Option(None, "--port", help="Default JOBSTREAM_API_PORT (8080)."),
    view_dir: str | None = typer.Option(None, "--view-dir", help="Default JOBSTREAM_VIEW_DIR."),
    metrics_port: int = MetricsPortOption,
) -> None:
    """Serve the HTTP API (docs/api.md), with its views kept up to date."""
    # Loaded here, not with the command line: the app is most of the CLI's start-up time.
    from jobstream._connectors.api.server import ApiServer

    overrides = {"api_host": host, "api_port": port, "view_dir": view_dir}
    settings = load_api_settings(**{k: v for k, v in overrides.items() if v is not None})
    engine = load_settings()
    stop = stop_on_signals()
    if metrics_port:  # first: a port taken stops the command before the API starts
        metrics.serve(metrics_port, engine.metrics_host)
    watch = watch_clock(engine, "api")
    server = ApiServer(engine, settings).start()
    typer.echo(f"API on {server.url} (docs: {server.url}/docs)", err=True)
    try:
        server.wait(stop)
    finally:
        server.stop()
        watch.stop()


def token_hash(token: str = typer.Argument(..., help="A bearer token.")) -> None:
    """Print the SHA-256 of a token, as JOBSTREAM_API_TOKENS and _ADMIN_TOKENS hold it."""
    typer.echo(hash_token(token))


# -- queries through the API ------------------------------------------------------------


def _get(settings: ApiSettings, path: str, params: dict[str, Any] | None = None) -> Any:
    return _call(settings, "GET", path, params=params).json()


def _post(settings: ApiSettings, path: str, body: dict[str, Any]) -> Any:
    return _call(settings, "POST", path, body=body).json()


def _call(settings: ApiSettings, method: str, path: str, *, params: dict[str, Any] | None = None,
          body: dict[str, Any] | None = None) -> httpx.Response:  # fmt: skip
    """The API's reply; an error answer or none at all is printed and exits EXIT_API."""
    logging.getLogger("httpx").setLevel(logging.WARNING)  # not a log line per request
    token = settings.api_token.get_secret_value() if settings.api_token else ""
    try:
        reply = httpx.request(method, settings.api_url.rstrip("/") + path, timeout=30,
                              params={k: v for k, v in (params or {}).items() if v is not None},
                              json=body, headers={"Authorization": f"Bearer {token}"})  # fmt: skip
    except httpx.HTTPError as exc:
        typer.echo(f"error: API at {settings.api_url} unreachable: {exc}", err=True)
        raise typer.Exit(EXIT_API) from None
    if reply.status_code >= 400:
        try:
            detail = reply.json().get("detail", reply.text)
        except ValueError:
            detail = reply.text
        typer.echo(f"error: {reply.status_code}: {detail}", err=True)
        raise typer.Exit(EXIT_API)
    return reply


def _when(ms: int | None) -> str:
    return "" if ms is None else f"{instant_of(ms):%m-%d %H:%M}"


_WHOLE = {"job id", "state", "try", "outcome"}
"""Columns never folded: an id cut in two cannot be copied."""


def _table(*columns: str) -> Table:
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    for name in columns:
        table.add_column(name, overflow="fold", no_wrap=name in _WHOLE)
    return table


def _pool(job: dict[str, Any]) -> str:
    """The job's pool, and whether it waits for a worker of it (as ``history`` says)."""
    pool = job.get("pool") or ""
    return f"{pool}: no live worker" if job.get("waiting_for_pool") else pool


jobs_app = typer.Typer(help="Query jobs through the HTTP API.", no_args_is_help=True)


@jobs_app.command("list")
def jobs_list(
    owner: str | None = typer.Option(None, "--owner", help="Only this owner's (admin tokens)."),
    state: str | None = typer.Option(None, "--state"),
    job_type: str | None = typer.Option(None, "--type"),
    label: str | None = typer.Option(None, "--label", help="name=value"),
    limit: int = typer.Option(50, "--limit", min=1, max=500),
    cursor: str | None = typer.Option(None, "--cursor", help="From a previous page."),
) -> None:
    """Jobs, newest first (UTC times); prints the cursor of the next page when there is one."""
    settings = load_api_settings()
    page = _get(settings, "/api/v1/jobs", {"owner": owner, "state": state, "type": job_type,
                                           "label": label, "limit": limit, "cursor": cursor})
    pools = any(job.get("pool") for job in page["items"])  # most pages have none: no column
    table = _table("job id", "type", "owner", "state", "try", "created",
                   *(["pool"] if pools else []))  # fmt: skip
    for job in page["items"]:
        table.add_row(job["job_id"], job["job_type"], job["owner"], job["state"],
                      str(job["attempt"]), _when(job["created_at_ms"]),
                      *([_pool(job)] if pools else []))  # fmt: skip
    _console().print(table)
    if page["next_cursor"]:
        typer.echo(f"next page: --cursor {page['next_cursor']}")


def history(job_id: str = typer.Argument(..., help="The job's id.")) -> None:
    """A job's executions (after its progress, when its run reported some): attempt, worker,
    start, end, outcome and error; then the commands people gave it: when, which, who
    asked and why (UTC)."""
    settings = load_api_settings()
    job = _get(settings, f"/api/v1/jobs/{job_id}")
    runs = _get(settings, f"/api/v1/jobs/{job_id}/executions")["executions"]
    console = _console()
    console.print(f"{job['job_id']}  {job['job_type']}  {job['owner']}  {job['state']}")
    if job.get("waiting_for_pool"):
        console.print(f"waiting: no live worker serves pool {job['pool']}")
    limits = [f"deadline {iso_ms(job['deadline_ms'])}" if job.get("deadline_ms") else "",
              f"queue limit {format_duration(job['queue_limit_ms'])}"
              if job.get("queue_limit_ms") else ""]  # fmt: skip
    if any(limits):
        console.print("limits: " + ", ".join(limit for limit in limits if limit))
    if job.get("keys"):
        console.print("keys: " + _keys(job["keys"]), markup=False)
    if job.get("held_by"):
        behind = ", ".join(job.get("waiting_for") or [])
        console.print(f"held: on {job['held_by']}" + (f", behind {behind}" if behind else ""),
                      markup=False)  # fmt: skip
    if job.get("joined_job_id"):
        console.print(f"collapsed: runs as {job['joined_job_id']}", markup=False)
    if job["state"] == "EXPIRED" and job.get("last_error"):
        console.print(f"expired: {job['last_error']['message']}", markup=False)
    if job.get("progress"):
        done = job["progress"]
        console.print(f"progress: {done['fraction']:.0%} {done.get('message') or ''}".rstrip(),
                      markup=False)  # fmt: skip
    table = _table("try", "worker", "started", "ended", "outcome", "error")
    for run in runs:
        error = run.get("error") or {}
        text = f"{error.get('error_type')}: {error.get('message')}" if error else ""
        table.add_row(str(run["attempt"]), run.get("worker_id") or "",
                      _when(run.get("started_at_ms")), _when(run.get("ended_at_ms")),
                      run["outcome"], text)  # fmt: skip
    console.print(table)
    if job.get("commands"):
        given = _table("when", "command", "by", "reason")
        for command in job["commands"]:
            given.add_row(_when(command["at_ms"]), command["kind"], command["by"],
                          command.get("reason") or "")  # fmt: skip
        console.print("commands")
        console.print(given)


def _keys(keys: dict[str, dict[str, object]]) -> str:
    """A job's keys in a line: ``concurrency customer-42 (limit 2), rate crm (100/min)``."""
    said = {"concurrency": lambda k: f"limit {k['limit']}", "rate": lambda k: str(k["rate"]),
            "debounce": lambda k: f"window {format_duration(int(k['window_ms']))}, keep "
                                  f"{str(k['keep']).lower()}",
            "singleton": lambda k: str(k["mode"]).lower()}  # fmt: skip
    return ", ".join(f"{kind} {key['key']} ({said[kind](key)})" for kind, key in keys.items()
                     if kind in said)  # fmt: skip


def result(
    job_id: str = typer.Argument(..., help="The job's id."),
    attempt: str | None = typer.Option(None, "--attempt", help="One run's result: an "
                                       "attempt number or an execution id (default: the "
                                       "job's latest result)."),
    output: Path | None = typer.Option(None, "-o", "--output", help="Write it to this file "
                                       "(default: standard output)."),
) -> None:  # fmt: skip
    """A job's result, as its handler returned it (JSON, or bytes), read from jobs.results
    through the API."""
    path = (f"/api/v1/jobs/{job_id}/result" if attempt is None
            else f"/api/v1/jobs/{job_id}/executions/{attempt}/result")  # fmt: skip
    reply = _call(load_api_settings(), "GET", path)
    content_type = reply.headers.get("content-type", "application/octet-stream")
    if output is not None:
        output.write_bytes(reply.content)
        typer.echo(f"{len(reply.content)} bytes ({content_type}) written to {output}", err=True)
        return
    textual = content_type.startswith(("application/json", "text/"))
    if not textual and sys.stdout.isatty():
        typer.echo(f"error: the result is {len(reply.content)} bytes of {content_type}: "
                   "write it to a file with -o", err=True)  # fmt: skip
        raise typer.Exit(EXIT_API)
    sys.stdout.buffer.write(reply.content)
    sys.stdout.buffer.flush()


def logs(
    job_id: str = typer.Argument(..., help="The job's id."),
    attempt: str | None = typer.Option(None, "--attempt", help="One run: an attempt number "
                                       "or an execution id (default: the job's latest run)."),
    as_json: bool = typer.Option(False, "--json", help="One JSON object per line, as "
                                 "jobs.logs holds them."),
) -> None:  # fmt: skip
    """The log lines a run of a job wrote (its handler's logging; with --isolation process
    also its stdout and stderr), read from jobs.logs through the API."""
    settings = load_api_settings()
    if attempt is None:
        runs = _get(settings, f"/api/v1/jobs/{job_id}/executions")["executions"]
        if not runs:
            typer.echo(f"error: job {job_id} has not run yet", err=True)
            raise typer.Exit(EXIT_API)
        attempt = str(runs[-1]["execution_id"])
    found = _get(settings, f"/api/v1/jobs/{job_id}/executions/{attempt}/logs")
    for line in found["lines"]:
        typer.echo(orjson.dumps(line).decode() if as_json else format_line(line))
    if found["dropped_lines"]:
        typer.echo(f"... {found['dropped_lines']} more lines dropped: past "
                   "JOBSTREAM_MAX_LOG_LINES or JOBSTREAM_MAX_LOG_BYTES", err=True)  # fmt: skip


def workers() -> None:
    """Workers: types (and pool), state, running of capacity, age of the last heartbeat."""
    found = _get(load_api_settings(), "/api/v1/workers")["workers"]
    table = _table("worker", "types", "state", "busy", "age", "stale")
    for w in found:
        pool = f" pool={w['pool']}" if w.get("pool") else ""
        table.add_row(w["worker_id"], ",".join(w["job_types"]) + pool, w["state"],
                      f"{w['running']}/{w['capacity']}", f"{w['age_ms'] / 1000:.0f}s",
                      "STALE" if w["stale"] else "")  # fmt: skip
    _console().print(table)


# -- backfill ---------------------------------------------------------------------------

BACKFILL_EPILOG = """Examples:

  jobstream backfill 01JD3W6Q8Z5X7M2K4N9P0R1S2T --from 2026-03-01T00:00Z --to 2026-03-02T00:00Z

  jobstream backfill $ID --from 2026-03-29T00:00+01:00 --to 2026-03-30T00:00+02:00 --dry-run

  jobstream backfill $ID --from 2026-01-01T00:00Z --to 2026-02-01T00:00Z --rate 300/m --no-wait
"""
FOLLOW_EVERY_S = 2.0
"""How often ``backfill`` asks the API how far its occurrences have got."""
_RATE_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0}
_ENDED = frozenset(state.value for state in TERMINAL_STATES)


def parse_rate(text: str) -> float:
    """``5/s``, ``300/m``, ``2/h`` or ``5`` (a second): occurrences a second;
    ValidationError naming ``rate`` otherwise."""
    number, _, unit = text.strip().partition("/")
    try:
        value = float(number)
    except ValueError:
        raise ValidationError("rate", f"expected N/s, N/m or N/h (e.g. 5/s), got {text!r}"
                              ) from None  # fmt: skip
    if (unit or "s") not in _RATE_UNITS:
        raise ValidationError("rate", f"unit must be /s, /m or /h, got {text!r}")
    return check_rate(value / _RATE_UNITS[unit or "s"])


def backfill(
    job_id: str = typer.Argument(..., help="The recurring job's id."),
    start: str = typer.Option(..., "--from", help="ISO 8601 instant with a zone: the first "
                              "occurrence at or after it runs."),
    end: str = typer.Option(..., "--to", help="ISO 8601 instant with a zone, not in the "
                            "future: the occurrences before it run."),
    rate: str = typer.Option("10/s", "--rate", help="Occurrences started: N/s, N/m or N/h "
                             "(0.01/s to 1000/s)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="List the occurrences and their "
                                 "job ids; run nothing."),
    wait: bool = typer.Option(True, "--wait/--no-wait", help="Follow the occurrences until "
                              "each has ended (Ctrl-C stops following, not the backfill)."),
) -> None:  # fmt: skip
    """Run a recurring job's occurrences of a past range [--from, --to), once each: a
    one-off job per occurrence, with the job's type, owner, params, retry policy, pool and
    labels. Asking again runs none twice. Prints the occurrences' job ids, oldest first."""
    with refusals():
        parse_instant_ms(start, "from")
        parse_instant_ms(end, "to")
        body = {"from": start, "to": end, "rate": parse_rate(rate), "dry_run": dry_run}
    settings = load_api_settings()
    out = _post(settings, f"/api/v1/jobs/{job_id}/backfill", body)
    items = out["occurrences"]
    if dry_run:
        table = _table("occurrence (UTC)", "job id", "exists")
        for item in items:
            table.add_row(item["occurrence"], item["job_id"], "" if item["created"] else "yes")
        _console().print(table)
        typer.echo(f"{len(items)} occurrences, {out['existing']} run or sent already; "
                   "dry run: nothing sent", err=True)  # fmt: skip
        return
    for item in items:
        typer.echo(item["job_id"])
    typer.echo(f"{len(items)} occurrences: {out['submitted']} sent at {out['rate']:g}/s, "
               f"{out['existing']} run or sent already", err=True)  # fmt: skip
    if wait and items:
        try:
            ended = _follow(settings, job_id, {item["job_id"] for item in items})
        except KeyboardInterrupt:
            typer.echo("stopped following: the backfill goes on", err=True)
            raise typer.Exit(130) from None
        typer.echo("ended: " + ", ".join(f"{n} {state}" for state, n in
                                         sorted(Counter(ended.values()).items())), err=True)


def _follow(settings: ApiSettings, job_id: str, ids: set[str]) -> dict[str, str]:
    """Poll the jobs labelled as ``job_id``'s backfill until each of ``ids`` has ended,
    with a progress bar; their end states."""
    ended: dict[str, str] = {}
    with progress_bar("occurrences ended") as step:
        while True:
            cursor = None
            while True:
                page = _get(settings, "/api/v1/jobs", {"label": f"{OF_LABEL}={job_id}",
                                                       "limit": 500, "cursor": cursor})
                for job in page["items"]:
                    if job["job_id"] in ids and job["state"] in _ENDED:
                        ended[job["job_id"]] = job["state"]
                cursor = page["next_cursor"]
                if not cursor:
                    break
            step(len(ended), len(ids))
            if len(ended) >= len(ids):
                return ended
            time.sleep(FOLLOW_EVERY_S)


# -- replay ---------------------------------------------------------------------------

replay_app = typer.Typer(help="Rebuild state from the topics, from offset zero.",
                         no_args_is_help=True)  # fmt: skip


@replay_app.command("views")
def replay_views(
    view_dir: str | None = typer.Option(None, "--view-dir", help="Default JOBSTREAM_VIEW_DIR."),
) -> None:
    """Wipe the API's views and fold every record of the topics again (stop the API first:
    its views are locked while it runs)."""
    from jobstream._connectors.views import ViewStore, ViewUpdater  # as the API, when used

    api_settings = load_api_settings(**({"view_dir": view_dir} if view_dir else {}))
    store = ViewStore(api_settings.view_dir)
    updater = ViewUpdater(load_settings(), store, retention_ms=api_settings.view_retention)
    try:
        with progress_bar("views") as step:
            folded = updater.rebuild(step)
    finally:
        updater.close()
        store.close()
    typer.echo(f"views rebuilt in {api_settings.view_dir}: {folded} records folded", err=True)


def register(app: typer.Typer) -> None:
    """Add the connectors' commands to the ``jobstream`` app."""
    app.command("api")(api)
    app.command("token-hash")(token_hash)
    app.add_typer(jobs_app, name="jobs")
    app.command("history")(history)
    app.command("result")(result)
    app.command("logs")(logs)
    app.command("backfill", epilog=BACKFILL_EPILOG)(backfill)
    app.command("workers")(workers)
    replay_app.command("status")(replay_status)
    replay_app.command("timers")(replay_timers)
    app.add_typer(replay_app, name="replay")
