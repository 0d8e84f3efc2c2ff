"""The whole pipeline on one machine: each component a ``jobstream`` subprocess.

Used by ``jobstream demo`` and ``jobstream pipeline``. Each process logs to its own file
under ``<home>/logs``, keeps its state under ``<home>/state`` (unless the stack's
environment says otherwise) and serves /healthz on its own port, which is how the stack knows
it is up. Stopping sends SIGTERM (components drain and commit), then SIGKILL. Every
process holds the stack's lifeline (pipeline/lifeline.py): when the process that runs the
stack ends, however it ends, they stop too.
"""

from __future__ import annotations

import http.client
import json
import logging
import os
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from jobstream._pipeline.config import ENV_PREFIX, Settings, load_settings
from jobstream._pipeline.durations import format_duration
from jobstream._pipeline.errors import JobstreamError
from jobstream._pipeline.kafka.admin import ensure_topics
from jobstream._pipeline.lifeline import ENV as LIFELINE_ENV
from jobstream._pipeline.topics import Topics

log = logging.getLogger(__name__)

DEMO_APP = "jobstream._ops.demo_jobs.app"


@dataclass(frozen=True)
class Component:
    name: str
    args: tuple[str, ...]
    metrics_port: int
    env: tuple[tuple[str, str], ...] = ()
    """Environment variables this process has beyond the stack's."""
    launcher: tuple[str, ...] = ()
    """A command the process is started through (one that puts it in a cgroup, then
    ``exec``s it: the same pid)."""


YIELDING = (("JOBSTREAM_NICE", "10"),)
"""The environment of the processes no start waits on: under a full CPU the timers and
workers run first, and the statuses catch up after (docs/scaling.md, "A full CPU")."""


def components(
    base_port: int = 9400,
    *,
    app: str = DEMO_APP,
    job_types: tuple[str, ...] = ("data.process", "image.render", "report.generate"),
    lease_s: float | None = None,
    heartbeat_s: float | None = None,
    instance: int = 0,
    triggers: bool = False,
) -> list[Component]:
    """The pipeline's processes: timers, status processor, retry router, a worker per type,
    and with ``triggers`` a trigger processor (on the port after the workers').

    ``instance`` numbers one copy of them: a second copy (``instance=1``, on other ports)
    joins the same consumer groups and takes half of the partitions. The first copy keeps
    the bare names (``timers``), later ones are suffixed (``timers-1``)."""
    lease = ("--lease", format_duration(round(lease_s * 1000))) if lease_s else ()
    beat = ("--heartbeat", format_duration(round(heartbeat_s * 1000))) if heartbeat_s else ()
    suffix = f"-{instance}" if instance else ""
    ident = ("--instance-id", str(instance))
    listed = [
        Component(f"timers{suffix}", ("timers", *ident), base_port),
        Component(f"status-processor{suffix}", ("status-processor", *ident, *lease),
                  base_port + 1, YIELDING),
        Component(f"retry-router{suffix}", ("retry-router", *ident), base_port + 2, YIELDING),
    ]  # fmt: skip
    for i, job_type in enumerate(job_types):
        listed.append(worker(job_type, f"{job_type}-{instance}", base_port + 3 + i, app=app,
                             extra=beat))  # fmt: skip
    if triggers:
        listed.append(Component(f"trigger-processor{suffix}", ("trigger-processor", *ident),
                                base_port + 3 + len(job_types), YIELDING))  # fmt: skip
    return listed


def worker(job_type: str, worker_id: str, port: int, *, app: str = DEMO_APP,
           concurrency: int = 4, extra: tuple[str, ...] = (),
           env: tuple[tuple[str, str], ...] = ()) -> Component:  # fmt: skip
    return Component(f"worker-{worker_id}", (
        "worker", "--app", app, "--type", job_type, "--concurrency", str(concurrency),
        "--worker-id", worker_id, *extra,
    ), port, env)  # fmt: skip


@dataclass
class RestartBackoff:
    """How long a supervisor waits before starting an ended component again: at once the
    first time, then twice as long each time it ends again soon after (a process that
    cannot start, a broker still away), reset once it has run for ``settle_s``."""

    first_s: float = 1.0
    max_s: float = 30.0
    settle_s: float = 60.0
    _last: dict[str, tuple[float, float]] = field(default_factory=dict)
    """Per component: when it was last restarted, and the delay taken then."""

    def delay_s(self, name: str, now: float) -> float:
        at, previous = self._last.get(name, (None, None))
        if at is None or previous is None or now - at > self.settle_s:
            delay = 0.0
        else:
            delay = min(self.max_s, max(self.first_s, 2 * previous))
        self._last[name] = (now + delay, delay)
        return delay


ENGINE = (sys.executable, "-m", "jobstream._pipeline")
"""The engine's commands in this interpreter: what a stack runs unless told otherwise."""


class Stack:
    def __init__(self, home: Path, env: dict[str, str] | None = None, *,
                 program: tuple[str, ...] = ENGINE, cwd: Path | None = None) -> None:  # fmt: skip
        """``program`` is the command each component's arguments follow (an installed
        ``jobstream``, say); ``cwd`` is the processes' working folder (default: ours)."""
        self.home = Path(home)
        self.logs = self.home / "logs"
        self.env = {**os.environ, "JOBSTREAM_STATE_DIR": str(self.home / "state"), **(env or {})}
        self.program = program
        self.cwd = cwd
        self.processes: dict[str, tuple[Component, subprocess.Popen[bytes]]] = {}
        self.started_at: dict[str, float] = {}
        """When each component's current process was started (monotonic seconds)."""
        # Only this process holds the write end (os.pipe's ends are not inherited; each
        # child gets the read end alone), so the children see EOF once it has ended.
        self._lifeline, self._lifeline_write = os.pipe()

    def start(self, parts: list[Component], *, timeout_s: float = 90.0,
              progress: Callable[[list[str]], object] | None = None) -> None:  # fmt: skip
        """Start ``parts`` and wait until each is healthy (:meth:`wait_healthy`)."""
        self.launch(parts)
        self.wait_healthy(timeout_s, progress=progress)

    def launch(self, parts: list[Component]) -> None:
        """Start ``parts`` without waiting for them."""
        self.logs.mkdir(parents=True, exist_ok=True)
        for part in parts:
            self._spawn(part)

    def _spawn(self, part: Component) -> None:
        command = [*part.launcher, *self.program, *part.args, "--metrics-port",
                   str(part.metrics_port)]  # fmt: skip
        env = {**self.env, **dict(part.env), LIFELINE_ENV: str(self._lifeline)}
        with open(self.logs / f"{part.name}.log", "ab") as out:
            process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT,
                                       stdin=subprocess.DEVNULL, cwd=self.cwd, env=env,
                                       pass_fds=(self._lifeline,))  # fmt: skip
        self.processes[part.name] = (part, process)
        self.started_at[part.name] = time.monotonic()
        log.info("started %s pid=%d", part.name, process.pid)

    def exited(self) -> dict[str, int]:
        """Components whose process has ended, with its exit code."""
        return {name: code for name, (_, process) in self.processes.items()
                if (code := process.poll()) is not None}  # fmt: skip

    def restart(self, name: str) -> None:
        """Start an ended component again, as it was (same ids, state folder and port)."""
        part, _ = self.processes[name]
        self._spawn(part)

    def supervise(self, stop: threading.Event, on_exit: Callable[[str, int, float], object],
                  backoff: RestartBackoff | None = None,
                  on_tick: Callable[[], object] | None = None) -> None:  # fmt: skip
        """Until ``stop``: start again every component that ends, after its backoff;
        ``on_exit(name, exit code, delay)`` is told first. ``on_tick`` runs every turn
        (twice a second), e.g. a :class:`HealthWatch`."""
        backoff = backoff or RestartBackoff()
        while not stop.wait(0.5):
            if on_tick is not None:
                on_tick()
            for name, code in self.exited().items():
                delay_s = backoff.delay_s(name, time.monotonic())
                on_exit(name, code, delay_s)
                if stop.wait(delay_s):
                    return
                self.restart(name)

    def kill(self, name: str, *, graceful: bool = False) -> None:
        """Stop one component: SIGTERM (it drains) or SIGKILL (as a crash would)."""
        _, process = self.processes.pop(name)
        self.started_at.pop(name, None)
        if graceful:
            process.terminate()
        else:
            process.kill()
        process.wait(60)

    def wait_healthy(self, timeout_s: float,
                     progress: Callable[[list[str]], object] | None = None) -> None:  # fmt: skip
        """Wait until every process answers /healthz; ``progress`` hears the ones still
        awaited every 10 s. Raises JobstreamError when one exits or ``timeout_s`` passes."""
        deadline = time.monotonic() + timeout_s
        told = time.monotonic()
        waiting = set(self.processes)
        while waiting:
            if progress is not None and time.monotonic() - told >= 10:
                progress(sorted(waiting))
                told = time.monotonic()
            for name in sorted(waiting):
                part, process = self.processes[name]
                if process.poll() is not None:
                    raise JobstreamError(f"{name} exited with {process.returncode}; its log:\n"
                                         f"{self.log_tail(name)}")  # fmt: skip
                if _healthy(part.metrics_port):
                    waiting.discard(name)
            if waiting and time.monotonic() > deadline:
                raise JobstreamError(f"not healthy after {timeout_s:.0f}s: {sorted(waiting)}")
            time.sleep(0.2)

    def stop(self, timeout_s: float = 30.0) -> None:
        for _, process in self.processes.values():
            if process.poll() is None:
                process.terminate()
        deadline = time.monotonic() + timeout_s
        for name, (_, process) in self.processes.items():
            try:
                process.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                log.warning("%s did not stop in time; killing it", name)
                process.kill()
                process.wait()
        self.processes.clear()
        self.started_at.clear()

    def healthy(self, name: str) -> bool:
        part, process = self.processes[name]
        return process.poll() is None and _healthy(part.metrics_port)

    def log_tail(self, name: str, lines: int = 20) -> str:
        path = self.logs / f"{name}.log"
        if not path.exists():
            return ""
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


def security_env(settings: Settings) -> dict[str, str]:
    """How ``settings`` reach the cluster and the schema registry, as a process's
    environment: the security protocol, the SASL and TLS settings, the further librdkafka
    settings and the registry, those that are set."""
    secret = {"SASL_PASSWORD": settings.sasl_password,
              "SSL_KEY_PASSWORD": settings.ssl_key_password}  # fmt: skip
    values = {
        "SECURITY_PROTOCOL": settings.security_protocol,
        "SASL_MECHANISM": settings.sasl_mechanism,
        "SASL_USERNAME": settings.sasl_username,
        "SSL_CA_LOCATION": settings.ssl_ca_location,
        "SSL_CERTIFICATE_LOCATION": settings.ssl_certificate_location,
        "SSL_KEY_LOCATION": settings.ssl_key_location,
        "SCHEMA_REGISTRY_URL": settings.schema_registry_url,
        "LIBRDKAFKA": json.dumps(settings.librdkafka) if settings.librdkafka else None,
        **{key: value.get_secret_value() if value else None for key, value in secret.items()},
    }
    return {f"{ENV_PREFIX}{key}": value for key, value in values.items() if value is not None}


def process_env(settings: Settings) -> dict[str, str]:
    """The environment of a stack's processes on ``settings``: this one's, less any
    ``JOBSTREAM_`` setting, plus the cluster, topics and partitions of ``settings`` and
    how to reach them (:func:`security_env`)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(ENV_PREFIX)}
    env.update({
        "JOBSTREAM_BOOTSTRAP_SERVERS": settings.bootstrap_servers,
        "JOBSTREAM_TOPIC_PREFIX": settings.topic_prefix,
        "JOBSTREAM_REPLICATION_FACTOR": str(settings.replication_factor),
        "JOBSTREAM_TIMER_PARTITIONS": str(settings.timer_partitions),
        "JOBSTREAM_EXEC_PARTITIONS": str(settings.exec_partitions),
        "JOBSTREAM_EVENTS_PARTITIONS": str(settings.events_partitions),
        "JOBSTREAM_DLQ_PARTITIONS": str(settings.dlq_partitions),
        "JOBSTREAM_FIRE_LEAD": f"{settings.fire_lead}ms",
        "JOBSTREAM_FIRE_LEAD_MOST": f"{settings.fire_lead_most}ms",
        "JOBSTREAM_CLOCK_CORRECTION": str(settings.clock_correction).lower(),
        "JOBSTREAM_LOG_LEVEL": "INFO",
        **security_env(settings),
    })  # fmt: skip
    return env


def small_topics(bootstrap: str, prefix: str) -> Topics:
    """Every topic, two partitions each (one for a dead-letter topic), under ``prefix``,
    created: a test's pipeline on a shared broker."""
    settings = load_settings(bootstrap_servers=bootstrap, topic_prefix=prefix,
                             timer_partitions=2, exec_partitions=2, events_partitions=2,
                             dlq_partitions=1)  # fmt: skip
    topics = Topics(settings)
    ensure_topics(settings.kafka_config, topics.specs())
    return topics


@contextmanager
def running_stack(settings: Settings, home: Path, parts: list[Component],
                  **env: str) -> Iterator[Stack]:  # fmt: skip
    """``parts`` running as processes on the topics of ``settings``, their state under
    ``home``; ``env`` adds to their environment. Stopped at the end."""
    running = Stack(home, {**process_env(settings), **env})
    try:
        running.start(parts)  # one that fails leaves those already started to the stop
        yield running
    finally:
        running.stop()


class HealthWatch:
    """What a supervisor tells of its components' health, once per change: a component
    that became healthy (and how long it took), one still not healthy ``slow_s`` after
    it started (it is waited for, not given up on), one that stopped being healthy."""

    def __init__(self, stack: Stack, say: Callable[[str], object], *, slow_s: float = 90.0,
                 every_s: float = 2.0) -> None:  # fmt: skip
        self.stack = stack
        self.say = say
        self.slow_s = slow_s
        self.every_s = every_s
        self._healthy: dict[str, bool] = {}
        self._told_slow: set[str] = set()
        self._checked = 0.0
        self.all_healthy_once = False

    def __call__(self) -> None:
        now = time.monotonic()
        if now - self._checked < self.every_s:
            return
        self._checked = now
        for name in sorted(self.stack.processes):
            started = self.stack.started_at[name]
            healthy = self.stack.healthy(name)
            was = self._healthy.get(name)
            if healthy and not was:
                self.say(f"{name} healthy, {now - started:.1f} s after it started")
                self._told_slow.discard(name)
            elif not healthy and was:
                self.say(f"{name} is not healthy any more; its log:\n"
                         f"{self.stack.log_tail(name)}")  # fmt: skip
            elif not healthy and now - started > self.slow_s and name not in self._told_slow:
                self._told_slow.add(name)
                self.say(f"{name} not healthy {now - started:.0f} s after it started; still "
                         f"waiting for it. Its log:\n{self.stack.log_tail(name)}")  # fmt: skip
            self._healthy[name] = healthy
        if not self.all_healthy_once and all(self._healthy.get(n) for n in self.stack.processes):
            self.all_healthy_once = True
            self.say(f"pipeline running; logs in {self.stack.logs}; Ctrl-C stops it")


def _healthy(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1) as reply:
            return bool(reply.status == 200)
    # HTTPException: not a metrics server's answer (e.g. a probe connected to itself).
    except (urllib.error.URLError, OSError, http.client.HTTPException):
        return False
