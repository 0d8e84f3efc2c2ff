"""run_tutorial (tests/support/tutorial.py) on small pages of its format, with no broker:
one shell for every step, the test's value for an export, files written, a wait, the
clean-up run after a failure or a command that hangs too, and nothing left running, the
broker of the tutorial's folder included."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from jobstream._ops.kafka.cluster import Layout
from jobstream._ops.kafka.ports import free_base_port
from tests.support.tutorial import TutorialError, run_tutorial
from tests.support.wheel import Installed

pytestmark = pytest.mark.usefixtures("child_processes")

PAGE = """# A page

## Start

```bash
export PORT=1
sleep 300 &
echo $! > sleeper.pid
COUNT=0
```

## A file

```text title="data/note.txt"
hello
```

## Wait

<!-- tutorial: until "3" within 30s -->
```bash
COUNT=$((COUNT + 1)); echo "count $COUNT"
```

## Check

```bash
cat data/note.txt
test "$PORT" = 4242 && echo "port $PORT"
command -v python
{failing}
```

## End

<!-- tutorial: finally -->
```bash
kill $(jobs -p)
wait
{cleanup}
touch cleaned-up
```
"""


@pytest.fixture
def installed(tmp_path: Path) -> Installed:
    """This interpreter's environment standing in for the wheel's."""
    home = tmp_path / "home"
    home.mkdir()
    return Installed(Path(sys.prefix), home)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_a_page_runs_in_one_shell_to_its_clean_up(installed: Installed, tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(PAGE.format(failing="true", cleanup="true"))
    work = tmp_path / "work"
    ran = run_tutorial(installed, work, page=page, overrides={"PORT": "4242"})
    outputs = {r.command: r.output for r in ran}
    assert outputs['COUNT=$((COUNT + 1)); echo "count $COUNT"'] == "count 3\n"
    assert outputs["cat data/note.txt"] == "hello\n"
    assert outputs['test "$PORT" = 4242 && echo "port $PORT"'] == "port 4242\n"
    assert outputs["command -v python"].startswith(str(Path(sys.prefix) / "bin"))
    assert (work / "cleaned-up").exists()
    assert not _alive(int((work / "sleeper.pid").read_text()))


def test_a_failing_step_is_reported_and_the_clean_up_still_runs(
    installed: Installed, tmp_path: Path
) -> None:
    page = tmp_path / "page.md"
    page.write_text(PAGE.format(failing="echo about to fail; false", cleanup="false"))
    work = tmp_path / "work"
    with pytest.raises(TutorialError) as failed:
        run_tutorial(installed, work, page=page, overrides={"PORT": "4242"})
    message = str(failed.value)
    assert "page.md:" in message and "(Check)" in message
    assert "`echo about to fail; false` exited 1" in message
    assert "about to fail" in message
    # the clean-up went on past its own failing command, and the step's failure came first
    assert (work / "cleaned-up").exists()
    assert not _alive(int((work / "sleeper.pid").read_text()))


HUNG = "sh -c 'echo $$ > hung.pid; exec sleep 300'"


def test_a_command_that_outlives_its_time_is_stopped_and_the_clean_up_still_runs(
    installed: Installed, tmp_path: Path
) -> None:
    page = tmp_path / "page.md"
    page.write_text(PAGE.format(failing=HUNG, cleanup="true"))
    work = tmp_path / "work"
    with pytest.raises(TutorialError) as failed:
        run_tutorial(installed, work, page=page, overrides={"PORT": "4242"}, step_timeout_s=3)
    assert f"`{HUNG}` did not end in time" in str(failed.value)
    # the clean-up ran in a fresh shell, once the hung one was stopped with what it ran
    assert (work / "cleaned-up").exists()
    assert not _alive(int((work / "hung.pid").read_text()))
    assert not _alive(int((work / "sleeper.pid").read_text()))


def test_the_broker_of_the_tutorials_folder_is_stopped_whatever_the_clean_up_did(
    installed: Installed, tmp_path: Path
) -> None:
    """A process in a session of its own, as `jobstream kafka up` starts the broker, out of
    reach of the shell's: the runner's own `jobstream kafka down --home` stops it."""
    work = tmp_path / "work"
    home = work / ".jobstream" / "kafka"
    layout = Layout.plan(nodes=1, port=free_base_port(1), heap_mb=256)
    node = home / f"node-{layout.nodes[0].node_id}"
    node.mkdir(parents=True)
    layout.save(home / "cluster.json")
    broker = subprocess.Popen(["sleep", "300"], start_new_session=True)
    try:
        (node / "pid").write_text(str(broker.pid))
        page = tmp_path / "page.md"
        page.write_text(PAGE.format(failing=HUNG, cleanup="true"))
        with pytest.raises(TutorialError):
            run_tutorial(installed, work, page=page, overrides={"PORT": "4242"},
                         step_timeout_s=3)  # fmt: skip
        assert broker.wait(timeout=10) == -signal.SIGTERM
    finally:
        broker.kill()
        broker.wait()
