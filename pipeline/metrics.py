"""Prometheus metrics and the health endpoint every long-running process can expose.

``serve(port)`` starts an HTTP server with ``/metrics`` (Prometheus text) and
``/healthz``: 200, or 503 naming the problem when the process's loop has not turned
within the last ``STALE_AFTER_S`` seconds or one of its health checks
(:func:`add_health_check`: a processor without partitions, commits failing) reports one.
Metrics are updated once per batch, not per record, except the lateness histograms whose
distribution is the point. The port binds 127.0.0.1 unless ``JOBSTREAM_METRICS_HOST`` says
otherwise. Every name is listed in docs/metrics.md.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client import CONTENT_TYPE_LATEST, Counter, Gauge, Histogram, generate_latest

from jobstream._pipeline.errors import ConfigurationError

log = logging.getLogger(__name__)

STALE_AFTER_S = 30.0

LATENESS_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 30, 300)
"""Seconds; 2 is the firing promise, so a rule reads the share over it from a bucket."""

# -- every processor and worker (the runtime sets them: pipeline/runtime/) ---------------
LOOP_HEARTBEAT = Gauge("jobstream_loop_heartbeat_seconds",
                       "Unix time the process's main loop last turned", ["component"])  # fmt: skip
CONSUMED = Counter("jobstream_consumed_total", "Input records committed", ["component"])
TRANSACTIONS = Counter("jobstream_transactions_total", "Transactions committed", ["component"])
ABORTED = Counter("jobstream_transactions_aborted_total", "Transactions aborted", ["component"])
PARTITIONS = Gauge("jobstream_partitions", "Input partitions owned", ["component"])
COMMIT_SECONDS = Histogram(
    "jobstream_commit_seconds", "Time to flush and commit one transaction", ["component"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10, 30),
)  # fmt: skip
CONSUMER_LAG = Gauge("jobstream_consumer_lag",
                     "Records between the group's position and the end of its input partitions",
                     ["group", "topic"])  # fmt: skip
STORE_KEYS = Gauge("jobstream_store_keys",
                   "Keys in the processor's RocksDB stores (RocksDB's estimate); for the "
                   "timers, two per pending timer (the entry and its index by job id)",
                   ["component"])  # fmt: skip
CLOCK_OFFSET = Gauge("jobstream_clock_offset_seconds",
                     "The cluster's clock minus this host's, as the brokers' stamps on its "
                     "clock probes show (the process reads the cluster's clock)",
                     ["component"])  # fmt: skip
CLOCK_OFFSET_ERROR = Gauge("jobstream_clock_offset_error_seconds",
                           "The clock offset estimate's error (half the best probe's round "
                           "trip)", ["component"])  # fmt: skip

# -- what the jobs went through, from the lifecycle events each process commits ---------
FIRED = Counter("jobstream_fired_total", "Executions fired by the timers", ["job_type"])
FIRE_LATENESS = Histogram("jobstream_fire_lateness_seconds",
                          "Fire time minus scheduled time", ["job_type"],
                          buckets=LATENESS_BUCKETS)  # fmt: skip
THROTTLED = Counter("jobstream_throttled_total",
                    "Jobs a rate limit held back when they fell due", ["job_type"])  # fmt: skip
THROTTLED_SECONDS = Histogram("jobstream_throttled_seconds",
                              "How long rate limits held a fired job back (apart from its "
                              "fire lateness)", ["job_type"],
                              buckets=(0.1, 0.5, 1, 2, 5, 10, 30, 60, 300, 1800, 3600))  # fmt: skip
START_LATENESS = Histogram("jobstream_start_lateness_seconds",
                           "Start of a run minus its scheduled time", ["job_type"],
                           buckets=LATENESS_BUCKETS)  # fmt: skip
EXECUTIONS = Counter("jobstream_executions_total",
                     "Runs that ended: SUCCEEDED, FAILED, TIMED_OUT (workers), LOST (status)",
                     ["job_type", "outcome"])  # fmt: skip
RETRIES = Counter("jobstream_retries_total", "Retries scheduled by the retry router",
                  ["job_type"])  # fmt: skip
DEAD_LETTERS = Counter("jobstream_dead_letters_total", "Jobs sent to jobs.dlq.<type>",
                       ["job_type"])  # fmt: skip
DUPLICATES = Counter("jobstream_duplicates_total",
                     "Second runs of an execution detected by the status processor",
                     ["job_type"])  # fmt: skip
LEASES_EXPIRED = Counter("jobstream_leases_expired_total",
                         "Running jobs declared LOST after their lease passed without a heartbeat",
                         ["job_type"])  # fmt: skip
EXPIRED = Counter("jobstream_expired_total",
                  "Jobs that ended EXPIRED, by reason: deadline (no attempt may start past "
                  "it), queue_limit (no worker took it in time), other",
                  ["job_type", "reason"])  # fmt: skip
WORKER_HEARTBEAT = Gauge("jobstream_worker_heartbeat_seconds",
                         "Unix time a worker serving the type last sent its heartbeat",
                         ["job_type"])  # fmt: skip
TIMER_DEAD_LETTERED = Counter("jobstream_timer_dead_lettered_total",
                              "Intake records sent to the intake dead-letter topic")  # fmt: skip
TRIGGER_MATCHED = Counter("jobstream_trigger_matched_total",
                          "Source records that started a job, per trigger (owner/name)",
                          ["trigger"])  # fmt: skip
TRIGGER_SKIPPED = Counter("jobstream_trigger_skipped_total",
                          "Source records a trigger's filter passed over", ["trigger"])
TRIGGER_REFUSED = Counter("jobstream_trigger_refused_total",
                          "Source records a trigger could not read, sent to jobs.triggers.dlq",
                          ["trigger"])  # fmt: skip
TRIGGER_LAG = Gauge("jobstream_trigger_lag",
                    "Records of a trigger's source topic not yet read by its processors",
                    ["trigger"])  # fmt: skip

# -- the API process, read off its views when scraped (connectors/api/metrics.py) -------
JOBS_WAITING_FOR_POOL = Gauge("jobstream_jobs_waiting_for_pool",
                              "Jobs QUEUED for a pool that no live worker of their type serves",
                              ["pool", "job_type"])  # fmt: skip


HealthCheck = Callable[[], str | None]
_HEALTH_CHECKS: dict[str, HealthCheck] = {}
Refresh = Callable[[], None]
_REFRESHES: dict[str, Refresh] = {}


def add_refresh(component: str, step: Refresh) -> None:
    """``step()`` sets ``component``'s gauges before each scrape of /metrics: for values
    read off a store, which no loop of the process sets as it goes."""
    _REFRESHES[component] = step


def remove_refresh(component: str) -> None:
    _REFRESHES.pop(component, None)


def refresh() -> None:
    """Run every refresh; one that fails is logged, and the scrape answers the rest."""
    for component, step in list(_REFRESHES.items()):
        try:
            step()
        except Exception:  # its store may be closing: the other series still answer
            log.exception("metrics of %s not refreshed", component)


def add_health_check(component: str, check: HealthCheck) -> None:
    """``check()`` returns None while ``component`` is healthy, else what is wrong."""
    _HEALTH_CHECKS[component] = check


def remove_health_check(component: str) -> None:
    _HEALTH_CHECKS.pop(component, None)


def health_problems() -> list[str]:
    """What is wrong with this process now; empty when it is healthy."""
    stale = [
        sample.labels["component"]
        for metric in LOOP_HEARTBEAT.collect()
        for sample in metric.samples
        if time.time() - sample.value > STALE_AFTER_S
    ]
    problems = [f"stale: {', '.join(stale)}"] if stale else []
    for component, check in list(_HEALTH_CHECKS.items()):
        problem = check()
        if problem is not None:
            problems.append(f"{component}: {problem}")
    return problems


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path == "/metrics":
            refresh()
            self._reply(200, generate_latest(), CONTENT_TYPE_LATEST)
        elif self.path == "/healthz":
            problems = health_problems()
            body = "".join(f"{problem}\n" for problem in problems) or "ok\n"
            self._reply(503 if problems else 200, body.encode(), "text/plain")
        else:
            self._reply(404, b"not found\n", "text/plain")

    def _reply(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass  # scrapes are not worth a log line each


def serve(port: int, host: str = "127.0.0.1") -> ThreadingHTTPServer:
    """Serve /metrics and /healthz on ``port`` from a daemon thread; a port that cannot be
    bound (taken by another process) stops the process at start, naming it."""
    try:
        server = ThreadingHTTPServer((host, port), _Handler)
    except OSError as exc:
        raise ConfigurationError(
            f"cannot serve metrics on {host}:{port} ({exc.strerror}): choose another port "
            "with --metrics-port or JOBSTREAM_METRICS_PORT") from exc  # fmt: skip
    threading.Thread(target=server.serve_forever, name="metrics", daemon=True).start()
    log.info("metrics and health on http://%s:%d/", host, server.server_address[1])
    return server
