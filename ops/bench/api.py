"""``jobstream bench-api``: the HTTP API's accepted jobs/s and its owner listing's latency.

1. Submissions: ``POST /api/v1/jobs/batch`` of ``--batch-size`` jobs from
   ``--batch-clients`` client processes (each one request after another), and single
   ``POST /api/v1/jobs`` from ``--concurrency`` clients at once, against a real server
   and broker; a job counts once the API answered 201 (the broker acknowledged it). The
   CPU time per accepted batch job of the API's process (handlers, producer), of its view
   updater's process and of the broker say what each takes on a machine not shared with
   other work.
2. Listing: a view store filled with ``--view-jobs`` jobs of ``--owners`` owners and
   compacted (the steady state of a view, not the minutes after a bulk load), then
   ``GET /api/v1/jobs?limit=50`` by owner tokens of random owners from a client process
   of its own; the latency of each request as the client sees it, p50/p99, after a warm-up
   of 200 requests that opens the connections.
"""

from __future__ import annotations

import asyncio
import os
import random
import shutil
import statistics
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import msgspec
import orjson
import typer
from rich.table import Table

from jobstream._connectors.api.auth import hash_token
from jobstream._connectors.api.settings import load_api_settings
from jobstream._ops.bench import options
from jobstream._ops.bench.harness import broker, create_topics, run_topics
from jobstream._ops.bench.measure import cpu_seconds
from jobstream._ops.bench.report import console, write_results
from jobstream._pipeline.model.records import JobSubmitted
from jobstream._pipeline.scheduling import new_job_id

if TYPE_CHECKING:
    from jobstream._connectors.api.server import ApiServer

JOB = {"job_type": "data.process", "params": {"input": "sales.csv"}}


def _server(settings: Any, views: Path, owners: int) -> ApiServer:
    # Loaded when the bench runs, not with the jobstream command (most of its start-up).
    from jobstream._connectors.api.server import ApiServer

    tokens = {hash_token(f"token-{n}"): f"owner-{n}" for n in range(owners)}
    # Quotas still count every submission, but so high that none refuses one: the bench
    # measures what the API accepts, not what the default quotas let through.
    api = load_api_settings(api_port=0, api_tokens=tokens, view_dir=views,
                            quota_submit_rate=1e9, quota_submit_burst=10**9,
                            quota_pending_jobs=10**9)  # fmt: skip
    return ApiServer(settings, api).start()


def _batches(url: str, count: int, size: int, start_at: float) -> tuple[float, float]:
    """``count`` batch requests one after another; (first sent, last answered) in
    ``time.time()``, so that the parent can add clients of several processes up."""
    body = orjson.dumps({"jobs": [JOB] * size})
    headers = {"Authorization": "Bearer token-0", "content-type": "application/json"}
    with httpx.Client(base_url=url, headers=headers, timeout=60) as client:
        time.sleep(max(0.0, start_at - time.time()))  # every client starts together
        started = time.time()
        for _ in range(count):
            reply = client.post("/api/v1/jobs/batch", content=body)
            reply.raise_for_status()
        return started, time.time()


def _cpu_s(pids: dict[str, int]) -> dict[str, float]:
    """CPU seconds of this process, every thread (the API server and its producer; the
    clients run in processes of their own), and of each process of ``pids``."""
    times = os.times()
    return {"api": times.user + times.system,
            **{name: cpu_seconds(pid) for name, pid in pids.items()}}  # fmt: skip


def _batch_rate(url: str, count: int, size: int, clients: int) -> float:
    """Accepted jobs/s of ``clients`` processes sending ``count`` batches in all: clients
    in processes of their own, so that their JSON and HTTP work does not share the
    server's interpreter."""
    start_at = time.time() + 3.0  # after the processes have started and imported
    shares = [count // clients + (1 if n < count % clients else 0) for n in range(clients)]
    with ProcessPoolExecutor(clients, mp_context=get_context("spawn")) as pool:
        spans = list(pool.map(_batches, [url] * clients, shares, [size] * clients,
                              [start_at] * clients))  # fmt: skip
    elapsed = max(end for _, end in spans) - min(start for start, _ in spans)
    return count * size / elapsed


async def _singles(url: str, count: int, concurrency: int) -> float:
    auth = {"Authorization": "Bearer token-0"}
    async with httpx.AsyncClient(base_url=url, timeout=60, headers=auth) as client:
        left = iter(range(count))

        async def one_client() -> None:
            for _ in left:
                (await client.post("/api/v1/jobs", json=JOB)).raise_for_status()

        started = time.perf_counter()
        await asyncio.gather(*(one_client() for _ in range(concurrency)))
        return count / (time.perf_counter() - started)


def _fill(views: Path, jobs: int, owners: int) -> float:
    """``jobs`` submissions folded into a fresh store, as the updater would fold them."""
    from jobstream._connectors.views import ViewStore

    store = ViewStore(views)
    store.ensure_layout()  # else the server, finding no layout mark, wipes the fill
    started = time.perf_counter()
    now = int(time.time() * 1000) - jobs
    batch = store.batch()
    for n in range(jobs):
        batch.submitted(msgspec.convert({
            "job_id": new_job_id(now + n), "workflow_id": None, "idempotency_key": None,
            "submitted_at_ms": now + n,
            "spec": {"job_type": "data.process", "owner": f"owner-{n % owners}", "params": "{}",
                     "priority": "NORMAL", "run_at_ms": None, "cron": None,
                     "labels": {"shard": str(n % 10)}},
        }, JobSubmitted))  # fmt: skip
        if len(batch.changes) > 100_000:
            batch.commit()
    batch.commit()
    elapsed = time.perf_counter() - started
    store.compact()
    store.close()
    return elapsed


def _listing_elsewhere(url: str, owners: int, requests: int) -> list[float]:
    """:func:`_listing` in a process of its own, so the latencies are the server's."""
    with ProcessPoolExecutor(1, mp_context=get_context("spawn")) as pool:
        return pool.submit(_listing, url, owners, requests).result()


def _listing(url: str, owners: int, requests: int) -> list[float]:
    latencies = []
    clients: dict[int, httpx.Client] = {}
    try:
        for _ in range(requests):
            n = random.randrange(owners)
            client = clients.get(n) or clients.setdefault(
                n,
                httpx.Client(
                    base_url=url, headers={"Authorization": f"Bearer token-{n}"}, timeout=30
                ),
            )
            started = time.perf_counter()
            reply = client.get("/api/v1/jobs", params={"limit": 50})
            latencies.append((time.perf_counter() - started) * 1000)
            assert reply.status_code == 200 and len(reply.json()["items"]) == 50, reply.text
    finally:
        for client in clients.values():
            client.close()
    return latencies


def bench_api(
    batches: int = typer.Option(20, "--batches", min=1, help="Batch requests to send."),
    batch_size: int = typer.Option(1000, "--batch-size", min=1, max=1000),
    batch_clients: int = typer.Option(
        4, "--batch-clients", min=1, help="Processes sending batches at once."
    ),
    singles: int = typer.Option(2000, "--singles", min=1, help="Single submissions."),
    concurrency: int = typer.Option(32, "--concurrency", min=1, help="Single-POST clients."),
    view_jobs: int = typer.Option(1_000_000, "--view-jobs", min=1000, help="Jobs in the view."),
    owners: int = typer.Option(100, "--owners", min=1),
    requests: int = typer.Option(2000, "--requests", min=1, help="Listing requests."),
    bootstrap: str | None = options.BootstrapOption,
    port: int = options.PortOption,
    workdir: Path = options.WorkdirOption,
    kafka_home: Path | None = options.KafkaHomeOption,
    out: Path | None = options.OutOption,
) -> None:
    """Measure the HTTP API: accepted jobs/s (batch and single) and owner listing p99."""
    views = workdir / "api-views"
    shutil.rmtree(views, ignore_errors=True)
    with (
        broker(bootstrap, options.kafka_home_of(kafka_home, workdir), port) as running,
        run_topics(running.bootstrap, timer_partitions=6, exec_partitions=2) as settings,
    ):
        create_topics(settings)
        server = _server(settings, views, owners)
        try:
            pids = {name: pid for name, pid in
                    {"views": server.updater.pid, **running.pids}.items() if pid}  # fmt: skip
            load = os.getloadavg()[0]
            cpu = _cpu_s(pids)
            batch_rate = _batch_rate(server.url, batches, batch_size, batch_clients)
            batch_cpu_us = {name: (spent - cpu[name]) * 1e6 / (batches * batch_size)
                            for name, spent in _cpu_s(pids).items()}  # fmt: skip
            single_rate = asyncio.run(_singles(server.url, singles, concurrency))
        finally:
            server.stop()
        shutil.rmtree(views, ignore_errors=True)
        fill_s = _fill(views, view_jobs, owners)
        server = _server(settings, views, owners)
        try:
            _listing_elsewhere(server.url, owners, min(requests, 200))  # warm: connections
            latencies = sorted(_listing_elsewhere(server.url, owners, requests))
        finally:
            server.stop()
    report = {
        "batch_clients": batch_clients,
        "batch_jobs_per_s": round(batch_rate),
        **{f"batch_cpu_us_per_job_{name}": round(us, 1) for name, us in batch_cpu_us.items()},
        "load_1m": round(load, 1),
        "single_jobs_per_s": round(single_rate),
        "view_jobs": view_jobs, "view_fill_s": round(fill_s, 1),
        "list_p50_ms": round(statistics.median(latencies), 2),
        "list_p99_ms": round(latencies[int(len(latencies) * 0.99) - 1], 2),
        "list_max_ms": round(latencies[-1], 2),
    }  # fmt: skip
    table = Table("measure", "value")
    for key, value in report.items():
        table.add_row(key, str(value))
    console.print(table)
    write_results(out, report)
