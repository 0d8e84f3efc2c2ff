"""The pipeline's processes (ops/stack.py) with what fault injection adds: restart a
killed component as it was, start a worker under a new id, pause and resume one, and
notice a process that exits on its own.

Stack keeps each running process under its component's name; a restart starts the same
:class:`Component` again (same instance id, worker id, state folder and /healthz port),
so it takes back its transactional id and static group membership as a supervisor's
restart would.
"""

from __future__ import annotations

import dataclasses
import logging
import subprocess
from dataclasses import dataclass
from pathlib import Path

from jobstream._ops.bench.profile import py_spy
from jobstream._ops.faults.pauses import Pauses
from jobstream._ops.stack import Component, Stack
from jobstream._pipeline.clock import now_ms

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Exit:
    """A process that ended without the run asking it to."""

    name: str
    code: int
    seen_ms: int
    log_tail: str


class Supervisor:
    def __init__(self, stack: Stack) -> None:
        self.stack = stack
        self.stopped: dict[str, Component] = {}
        """Components killed by the run, by name, until they are started again."""
        self.paused: Pauses[str] = Pauses(self.pid)
        self.exits: list[Exit] = []
        self.restarts_workers = False
        """Start a worker that exits again at once, as systemd would (poison scenarios)."""
        self.deaths: list[Exit] = []
        """The workers that exited and were started again."""

    def start(self, parts: list[Component]) -> None:
        self.stack.start(parts)

    def workers(self) -> dict[str, str]:
        """Running workers: component name -> worker id."""
        found = {}
        for name, (part, _) in dict(self.stack.processes).items():
            if "--worker-id" in part.args:
                found[name] = part.args[part.args.index("--worker-id") + 1]
        return found

    def pid(self, name: str) -> int:
        return self._process(name).pid

    def kill(self, name: str) -> int:
        """SIGKILL one component, as a crash would; returns its pid."""
        part, process = self.stack.processes[name]
        self.stack.kill(name)
        self.stopped[name] = part
        return process.pid

    def restart(self, name: str) -> int:
        """Start a killed component again as it was, and wait until it is healthy."""
        part = self.stopped.pop(name)
        self.stack.start([part])
        return self.pid(name)

    def replace(self, name: str, worker_id: str, port: int) -> tuple[str, int]:
        """Start a killed worker's component under a new worker id (and /healthz port);
        returns the new component's name and pid."""
        part = self.stopped.pop(name)
        args = list(part.args)
        args[args.index("--worker-id") + 1] = worker_id
        new = dataclasses.replace(part, name=f"worker-{worker_id}", args=tuple(args),
                                  metrics_port=port)  # fmt: skip
        self.stack.start([new])
        return new.name, self.pid(new.name)

    def pause(self, name: str) -> int:
        return self.paused.pause(name)

    def resume(self, name: str) -> None:
        self.paused.resume(name)

    def check_exits(self) -> list[Exit]:
        """Processes that have ended since the last call, without being killed by the run.

        Called from the run's reading loop while a scenario may be starting a process on
        another thread: it reads a copy of the table of processes, never the table.
        """
        new = []
        reported = {e.name for e in self.exits}
        for name, (part, process) in dict(self.stack.processes).items():
            code = process.poll()
            if code is not None and self.restarts_workers and "--worker-id" in part.args:
                self.deaths.append(Exit(name, code, now_ms(), ""))
                log.info("%s exited with %d: started again", name, code)
                self.stack.restart(name)
                continue
            if code is not None and name not in reported:
                found = Exit(name, code, now_ms(), self.stack.log_tail(name, 30))
                log.warning("%s exited with %d on its own", name, code)
                self.exits.append(found)
                new.append(found)
        return new

    def dump_stacks(self, folder: Path) -> dict[str, str]:
        """Every live process's Python stacks (``py-spy dump``), written under ``folder``:
        what each was doing when a run gave up waiting. Empty without py-spy."""
        executable = py_spy()
        if executable is None:
            return {}
        folder.mkdir(parents=True, exist_ok=True)
        written = {}
        for name, (_, process) in dict(self.stack.processes).items():
            if process.poll() is not None or name in self.paused:
                continue
            path = folder / f"{name}.txt"
            try:
                dump = subprocess.run([executable, "dump", "--pid", str(process.pid)],
                                      capture_output=True, text=True, timeout=30)  # fmt: skip
            except subprocess.TimeoutExpired:
                continue
            path.write_text(dump.stdout + dump.stderr)
            written[name] = str(path)
        return written

    def stop(self) -> None:
        """Resume what is paused (a stopped process cannot drain), then stop everything."""
        self.paused.resume_all()
        self.stack.stop()

    def _process(self, name: str) -> subprocess.Popen[bytes]:
        return self.stack.processes[name][1]
