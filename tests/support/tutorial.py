"""docs/getting-started.md taken apart into steps, and run the way a reader would run it.

The page's format, which :func:`parse` reads:

- a ```` ```bash ```` block holds commands, typed one by one into one shell (so variables,
  ``cd`` and background jobs carry from one block to the next); a command may go on over
  lines ending in ``\\``, and one ending in a lone ``&`` runs in the background;
- a block whose info string has ``title="path"`` (```` ```python title="myapp/jobs.py" ````)
  is a file the reader writes, relative to the folder the tutorial runs in;
- every other block (output, JSON) is shown, not run;
- an HTML comment right before a block, invisible on the page, says how to run it:
  ``<!-- tutorial: skip: why -->`` (not run: the install, which the test has done),
  ``<!-- tutorial: until "TEXT" within 120s -->`` (run again, a second apart, until it
  exits 0 with TEXT in its output; ``until 'TEXT'`` when TEXT holds a ``"``) and
  ``<!-- tutorial: finally -->`` (run at the end, also after a step failed: the clean-up).

:func:`run_tutorial` runs the steps in one ``bash`` with the wheel's virtualenv first on
``PATH``, in a folder of the test's, giving each ``export NAME=...`` of ``overrides`` the
test's value (a free port for ``KAFKA_PORT`` by default), and raises :class:`TutorialError`
with the step, the command and its output, and the background processes' logs, when one
fails. A command still running after its time is not waited for: the shell, and
everything it started, is stopped, and the clean-up runs in a fresh shell in the same folder
and environment. Whatever the clean-up did, the broker of the tutorial's folder is stopped
last (``jobstream kafka down --home``), since ``jobstream kafka up`` starts it in a session
of its own, out of reach of the shell's.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import signal
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.wheel import ROOT, Installed

PAGE = ROOT / "docs" / "getting-started.md"

_FENCE = re.compile(r"^(?P<fence>`{3,})(?P<info>[^`]*)$")
_HEADING = re.compile(r"^#{1,6}\s+(?P<title>.+?)\s*$")
_DIRECTIVE = re.compile(r"^<!--\s*tutorial:\s*(?P<body>.*?)\s*-->\s*$")
_UNTIL = re.compile(r"""^until\s+(?:"(?P<text>[^"]+)"|'(?P<quoted>[^']+)')"""
                    r"(?:\s+within\s+(?P<seconds>\d+(?:\.\d+)?)s)?$")  # fmt: skip
_TITLE = re.compile(r'\btitle="(?P<path>[^"]+)"')
_EXPORT = re.compile(r"^export\s+(?P<name>[A-Za-z_]\w*)=\S*$")

UNTIL_DEFAULT_S = 120.0


@dataclass(frozen=True)
class Step:
    """One block of the page that the tutorial runs or writes."""

    section: str
    """The heading the block is under."""
    line: int
    """The line of the page the block's fence opens on (1-based)."""
    text: str
    """The block's content."""
    path: str | None = None
    """For a file the reader writes: its path, relative to the tutorial's folder."""
    skip: bool = False
    until: str | None = None
    """Run the block again until it exits 0 with this text in its output."""
    within_s: float = UNTIL_DEFAULT_S
    final: bool = False
    """Run at the end, whatever happened before: the clean-up."""

    @property
    def commands(self) -> list[str]:
        return [] if self.path is not None else shell_commands(self.text)

    def where(self, page: Path = PAGE) -> str:
        return f"{page.name}:{self.line} ({self.section})"


def shell_commands(block: str) -> list[str]:
    """The commands of a bash block: lines joined where one ends in ``\\``, comments and
    blank lines left out."""
    commands: list[str] = []
    pending = ""
    for raw in block.splitlines():
        line = raw.rstrip()
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        commands.append((pending + line).strip())
        pending = ""
    if pending:
        commands.append(pending.strip())
    return commands


def in_background(command: str) -> bool:
    """A command that ends in a lone ``&`` (not ``&&``)."""
    return command.endswith("&") and not command.endswith("&&")


def parse(markdown: str) -> list[Step]:
    """The steps of a tutorial page, in order; a malformed directive or an unclosed block
    raises ``ValueError`` naming the line."""
    steps: list[Step] = []
    section = ""
    directive: tuple[int, str] | None = None
    lines = markdown.splitlines()
    number = 0
    while number < len(lines):
        line = lines[number]
        number += 1
        if heading := _HEADING.match(line):
            section = heading["title"]
        found = _DIRECTIVE.match(line.strip())
        fence = _FENCE.match(line)
        if directive is not None and line.strip() and fence is None:
            raise ValueError(f"line {directive[0]}: a tutorial directive with no block after it")
        if found is not None:
            directive = (number, found["body"])
            continue
        if fence is None:
            continue
        opened, info = number, fence["info"].strip()
        body: list[str] = []
        while number < len(lines) and lines[number].rstrip() != fence["fence"]:
            body.append(lines[number])
            number += 1
        if number == len(lines):
            raise ValueError(f"line {opened}: a code block that is never closed")
        number += 1
        step = _step(section, opened, info, "\n".join(body) + "\n", directive)
        directive = None
        if step is not None:
            steps.append(step)
    if directive is not None:
        raise ValueError(f"line {directive[0]}: a tutorial directive with no block after it")
    return steps


def _step(section: str, line: int, info: str, text: str,
          directive: tuple[int, str] | None) -> Step | None:  # fmt: skip
    title = _TITLE.search(info)
    language = info.split()[0] if info else ""
    if title is None and language != "bash":
        if directive is not None:
            raise ValueError(f"line {directive[0]}: a tutorial directive before a block "
                             f"that is only shown ({language or 'no language'})")  # fmt: skip
        return None
    step = Step(section, line, text, path=title["path"] if title else None)
    if directive is None:
        return step
    at, body = directive
    if body == "finally":
        return _replace(step, final=True)
    if body == "skip" or body.startswith("skip:"):
        return _replace(step, skip=True)
    if until := _UNTIL.match(body):
        seconds = float(until["seconds"]) if until["seconds"] else UNTIL_DEFAULT_S
        return _replace(step, until=until["text"] or until["quoted"], within_s=seconds)
    raise ValueError(f"line {at}: unknown tutorial directive {body!r} (skip, until \"TEXT\" "
                     "within Ns, until 'TEXT' within Ns, finally)")  # fmt: skip


def _replace(step: Step, **changes: object) -> Step:
    return Step(**{**step.__dict__, **changes})


def override(command: str, overrides: Mapping[str, str], seen: set[str]) -> str:
    """``export NAME=...`` with the test's value when ``overrides`` has NAME."""
    found = _EXPORT.match(command)
    if found is None or found["name"] not in overrides:
        return command
    seen.add(found["name"])
    return f"export {found['name']}={shlex.quote(overrides[found['name']])}"


def check_overrides(steps: list[Step], overrides: Mapping[str, str]) -> None:
    """Every overridden variable is exported by some step: a renamed one would otherwise
    leave the tutorial on its default port, beside other brokers."""
    seen: set[str] = set()
    for step in steps:
        for command in step.commands:
            override(command, overrides, seen)
    missing = sorted(set(overrides) - seen)
    if missing:
        raise ValueError(f"{PAGE.name} exports none of {missing}")


class TutorialError(AssertionError):
    """A step of the tutorial failed: the step, the command, its output and the logs."""


@dataclass(frozen=True)
class Ran:
    """A command the tutorial ran, and what it printed (stdout and stderr together)."""

    step: Step
    command: str
    output: str


@dataclass
class _Shell:
    """One ``bash`` fed the commands on its stdin, each command's output and exit status
    left in files of ``spool``; every process it starts is in its own session."""

    cwd: Path
    env: dict[str, str]
    spool: Path
    process: subprocess.Popen[bytes] = field(init=False)
    count: int = 0
    hung: bool = False
    """A command outlived its time: it still runs, and would hold every command after it."""

    def __post_init__(self) -> None:
        self.spool.mkdir(parents=True, exist_ok=True)
        self.log = (self.spool / "shell.log").open("wb")
        self.process = subprocess.Popen(
            ["bash", "--noprofile", "--norc"], cwd=self.cwd, env=self.env,
            stdin=subprocess.PIPE, stdout=self.log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip

    def run(self, command: str, timeout_s: float) -> tuple[int | None, str]:
        """Exit status (None: still running after ``timeout_s``, or the shell ended) and
        output of ``command``, run in the shell itself (not a subshell), its stdin empty so
        that it cannot read the commands that follow."""
        self.count += 1
        out, rc = self.spool / f"{self.count}.out", self.spool / f"{self.count}.rc"
        script = (f"{{ {command}\n}} >{shlex.quote(str(out))} 2>&1 </dev/null\n"
                  f"echo $? >{shlex.quote(str(rc))}.tmp && mv {shlex.quote(str(rc))}.tmp "
                  f"{shlex.quote(str(rc))}\n")  # fmt: skip
        assert self.process.stdin is not None
        try:
            self.process.stdin.write(script.encode())
            self.process.stdin.flush()
        except BrokenPipeError:
            return None, "the shell has ended"
        deadline = time.monotonic() + timeout_s
        while not rc.exists():
            if self.process.poll() is not None:
                return None, _read(out)
            if time.monotonic() > deadline:
                self.hung = True
                return None, _read(out)
            time.sleep(0.05)
        return int(rc.read_text().strip() or "1"), _read(out)

    @property
    def usable(self) -> bool:
        """Whether a command given now would run: the shell is alive and runs nothing."""
        return not self.hung and self.process.poll() is None

    def close(self, grace_s: float = 40.0) -> None:
        """End the shell, then everything left in its session: SIGTERM, then SIGKILL after
        ``grace_s`` (a worker drains its runs first)."""
        if self.process.stdin is not None and self.process.poll() is None:
            with contextlib.suppress(BrokenPipeError):
                self.process.stdin.close()
        _signal_group(self.process.pid, signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline:
            self.process.poll()  # a zombie shell would keep its group alive
            if not _group_alive(self.process.pid):
                break
            time.sleep(0.1)
        _signal_group(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=10)
        self.log.close()


def _read(path: Path) -> str:
    return path.read_text(errors="replace") if path.exists() else ""


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, sig)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def tutorial_env(installed: Installed, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The wheel's environment with its virtualenv activated, as ``. .venv/bin/activate``
    leaves a reader's shell."""
    env = installed.env(extra)
    env["PATH"] = f"{installed.venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["VIRTUAL_ENV"] = str(installed.venv)
    return env


def run_tutorial(installed: Installed, workdir: Path, *, page: Path = PAGE,
                 overrides: Mapping[str, str] | None = None,
                 env: Mapping[str, str] | None = None,
                 step_timeout_s: float = 600.0) -> list[Ran]:  # fmt: skip
    """Run ``page``'s steps in ``workdir`` with ``installed``'s virtualenv first on PATH.

    ``overrides`` replaces the value of each ``export NAME=...`` it names (default:
    ``KAFKA_PORT``, a free broker port whose controller port, 100 above, is free too);
    ``env`` adds to the environment. A command has ``step_timeout_s`` (the first
    ``jobstream kafka up`` fetches the jars); an ``until`` step its own ``within``. The
    ``finally`` steps run at the end, after a failure too, then whatever the shell still
    runs is stopped, then the broker of ``workdir`` (:func:`stop_broker`). After a command
    that did not end in time, the shell is stopped first (the hung command with it) and
    the ``finally`` steps run in a fresh one: its variables and jobs are gone, its jobs
    stopped as ``kill $(jobs -p)`` would. Returns every command run, with its output.
    """
    if overrides is None:
        from jobstream._ops.kafka.ports import free_base_port

        overrides = {"KAFKA_PORT": str(free_base_port(1))}
    steps = parse(page.read_text())
    check_overrides(steps, overrides)
    workdir.mkdir(parents=True, exist_ok=True)
    shell_env = tutorial_env(installed, env)
    spool = workdir.parent / f"{workdir.name}.shell"
    shell = _Shell(workdir, shell_env, spool)
    ran: list[Ran] = []
    failure: TutorialError | None = None
    try:
        for step in (s for s in steps if not s.skip and not s.final):
            ran += _run_step(shell, step, page, workdir, overrides, step_timeout_s)
    except TutorialError as error:
        failure = error
    finally:
        try:
            if not shell.usable:
                # Stopped before the clean-up runs: a hung `jobstream kafka up` could
                # otherwise start the broker after `jobstream kafka down` has run.
                shell.close()
                shell = _Shell(workdir, shell_env, spool / "clean-up")
            for step in (s for s in steps if s.final):
                try:
                    ran += _run_step(shell, step, page, workdir, overrides, step_timeout_s)
                except TutorialError as error:
                    failure = failure or error
        finally:
            shell.close()
            stopped = stop_broker(installed, workdir, shell_env)
            failure = failure or stopped
    if failure is not None:
        raise failure
    return ran


def broker_home(workdir: Path, env: Mapping[str, str]) -> Path:
    """The folder of the broker that ``jobstream kafka up`` starts in ``workdir`` with
    ``env``: ``JOBSTREAM_KAFKA_HOME``, else ``.jobstream/kafka`` (ops/cli.py)."""
    return workdir / env.get("JOBSTREAM_KAFKA_HOME", ".jobstream/kafka")


def stop_broker(installed: Installed, workdir: Path,
                env: Mapping[str, str]) -> TutorialError | None:  # fmt: skip
    """Stop the broker of ``workdir`` with the wheel's ``jobstream kafka down``, if it has
    one; the error when that fails, for the run to report."""
    home = broker_home(workdir, env)
    if not (home / "cluster.json").exists():
        return None
    try:
        done = subprocess.run([installed.jobstream, "kafka", "down", "--home", str(home)],
                              cwd=workdir, env=dict(env), capture_output=True, text=True,
                              timeout=120)  # fmt: skip
    except subprocess.TimeoutExpired as exc:
        return TutorialError(f"`jobstream kafka down --home {home}` did not end in time: {exc}")
    if done.returncode != 0:
        return TutorialError(f"`jobstream kafka down --home {home}` exited {done.returncode}:\n"
                             f"{done.stdout}{done.stderr}")  # fmt: skip
    return None


def _run_step(shell: _Shell, step: Step, page: Path, workdir: Path,
              overrides: Mapping[str, str], timeout_s: float) -> list[Ran]:  # fmt: skip
    if step.path is not None:
        target = workdir / step.path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(step.text)
        return []
    ran = []
    seen: set[str] = set()
    commands = [override(c, overrides, seen) for c in step.commands]
    if step.until is None:
        failed = None
        for command in commands:
            status, output = shell.run(command, timeout_s)
            if status != 0:
                failed = failed or TutorialError(_report(step, page, command, status, output,
                                                         workdir))  # fmt: skip
                # A clean-up goes on, the broker must stop all the same; but not behind a
                # command that still runs, where each one after it would time out too.
                if not step.final or not shell.usable:
                    break
            ran.append(Ran(step, command, output))
        if failed is not None:
            raise failed
        return ran
    deadline = time.monotonic() + step.within_s
    while True:
        outputs = []
        status: int | None = 0
        for command in commands:
            status, output = shell.run(command, timeout_s)
            outputs.append(output)
            if status != 0:
                break
        output = "".join(outputs)
        if status == 0 and step.until in output:
            return [Ran(step, c, o) for c, o in zip(commands, outputs, strict=True)]
        if status is None or time.monotonic() > deadline:
            waited = f'"{step.until}" within {step.within_s:g}s'
            raise TutorialError(_report(step, page, "; ".join(commands), status, output, workdir,
                                        waited=waited))  # fmt: skip
        time.sleep(1)


def _report(step: Step, page: Path, command: str, status: int | None, output: str,
            workdir: Path, waited: str | None = None) -> str:  # fmt: skip
    if waited:
        what = f"no {waited}"
    elif status is None:
        what = "did not end in time, or the shell ended"
    else:
        what = f"exited {status}"
    logs = "".join(f"\n--- {log.name} (last lines) ---\n{_tail(log)}"
                   for log in sorted(workdir.glob("*.log")))  # fmt: skip
    return f"{step.where(page)}: `{command}` {what}:\n{output[-4000:]}{logs}"


def _tail(path: Path, lines: int = 20) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) + "\n"
