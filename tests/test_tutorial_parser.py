"""docs/getting-started.md parses into the steps tests/support/tutorial.py runs, and the
parser reads the format as tests/support/tutorial.py's docstring says.
The steps run from the installed wheel in tests/ops/test_wheel.py."""

from __future__ import annotations

import re
import types

import pytest

from jobstream import WorkerApp
from tests.support.tutorial import (
    PAGE,
    check_overrides,
    in_background,
    override,
    parse,
    shell_commands,
)
from tests.support.wheel import ROOT


def test_the_getting_started_page_parses_into_its_steps() -> None:
    steps = parse(PAGE.read_text())
    skipped = [s for s in steps if s.skip]
    assert len(skipped) == 1 and any("pip install" in c for c in skipped[0].commands)
    run = [c for s in steps if not s.skip and not s.final for c in s.commands]
    assert any(c.startswith("jobstream kafka up") for c in run)
    assert "jobstream topics create" in run
    background = [c.split()[1] for c in run if in_background(c)]
    assert background == ["timers", "status-processor", "retry-router", "worker"]
    waits = [s for s in steps if s.until]
    # the state field as `jobstream status` prints it: the word elsewhere (a result, an
    # error) is not the job's state
    until = '"state": "SUCCEEDED"'
    assert [(s.until, s.commands) for s in waits] == [(until, ['jobstream status "$JOB_ID"'])]
    (final,) = [s for s in steps if s.final]
    assert final.commands[-1] == "jobstream kafka down"
    assert steps[-1] is final, "the clean-up is the page's last step"
    check_overrides(steps, {"KAFKA_PORT": "1"})


def test_the_worker_module_serves_the_type_the_page_runs_and_submits() -> None:
    steps = parse(PAGE.read_text())
    (module,) = [s for s in steps if s.path is not None]
    assert module.path == "myapp/jobs.py"
    namespace = types.ModuleType("myapp.jobs")
    exec(compile(module.text, module.path, "exec"), namespace.__dict__)
    app = namespace.__dict__["app"]
    assert isinstance(app, WorkerApp)
    commands = [c for s in steps for c in s.commands]
    (worker,) = [c for c in commands if c.startswith("jobstream worker")]
    (submit,) = [c for c in commands if "jobstream submit" in c]
    job_type = worker.split("--type ")[1].split()[0]
    assert "--app myapp.jobs" in worker
    assert f"--type {job_type}" in submit
    assert app.job_types == (job_type,)


def test_commands_join_continued_lines_and_leave_comments_out() -> None:
    block = "# a comment\n\njobstream submit --type a \\\n    --owner me\necho done   # said\n"
    assert shell_commands(block) == ["jobstream submit --type a      --owner me",
                                     "echo done   # said"]  # fmt: skip


def test_a_lone_ampersand_is_the_background() -> None:
    assert in_background("jobstream timers > timers.log 2>&1 &")
    assert not in_background("make setup && make run")
    assert not in_background("jobstream topics create")


def test_directives_skip_wait_and_clean_up() -> None:
    page = """# T

## Install

<!-- tutorial: skip: done by the test -->
```bash
pip install jobstream
```

## Wait

<!-- tutorial: until "SUCCEEDED" within 30s -->
```bash
jobstream status "$ID"
```

```json
{"shown": "only"}
```

## Files

```python title="pkg/mod.py"
x = 1
```

## End

<!-- tutorial: finally -->
```bash
jobstream kafka down
```
"""
    install, wait, module, end = parse(page)
    assert install.skip and install.section == "Install" and install.line == 6
    assert (wait.until, wait.within_s) == ("SUCCEEDED", 30.0)
    assert (module.path, module.text, module.commands) == ("pkg/mod.py", "x = 1\n", [])
    assert end.final and end.commands == ["jobstream kafka down"]


def test_until_text_with_double_quotes_is_in_single_quotes() -> None:
    (step,) = parse("""<!-- tutorial: until '"state": "SUCCEEDED"' within 5s -->
```bash
true
```
""")
    assert (step.until, step.within_s) == ('"state": "SUCCEEDED"', 5.0)


def test_until_has_a_default_time() -> None:
    (step,) = parse('<!-- tutorial: until "ok" -->\n```bash\ntrue\n```\n')
    assert step.until == "ok" and step.within_s == 120.0


@pytest.mark.parametrize(
    ("page", "message"),
    [
        ("<!-- tutorial: sometimes -->\n```bash\ntrue\n```\n", "unknown tutorial directive"),
        ("<!-- tutorial: skip -->\ntext\n```bash\ntrue\n```\n", "no block after it"),
        ("<!-- tutorial: skip -->\n", "no block after it"),
        ("<!-- tutorial: skip -->\n```json\n{}\n```\n", "only shown"),
        ("```bash\ntrue\n", "never closed"),
    ],
)
def test_a_malformed_page_is_refused_naming_the_line(page: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse(page)


def test_an_export_takes_the_tests_value() -> None:
    seen: set[str] = set()
    assert override("export KAFKA_PORT=9092", {"KAFKA_PORT": "23456"}, seen) == (
        "export KAFKA_PORT=23456")  # fmt: skip
    assert override("export OTHER=1", {"KAFKA_PORT": "23456"}, seen) == "export OTHER=1"
    assert seen == {"KAFKA_PORT"}


def test_an_override_the_page_never_exports_is_refused() -> None:
    steps = parse("```bash\nexport KAFKA_PORT=9092\n```\n")
    with pytest.raises(ValueError, match="BROKER_PORT"):
        check_overrides(steps, {"BROKER_PORT": "1"})


def test_the_readmes_first_job_is_the_tutorials() -> None:
    """The README's short version runs the same worker module and the same commands as
    docs/getting-started.md, which the wheel's test runs whole."""
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Your first job", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"^```(\w+)\n(.*?)^```$", section, flags=re.MULTILINE | re.DOTALL)
    steps = parse(PAGE.read_text())
    (module,) = [s for s in steps if s.path is not None]
    (readme_module,) = [body for language, body in blocks if body.startswith(f"# {module.path}")]
    assert readme_module.split("\n", 1)[1] == module.text
    tutorial = {_words(c) for s in steps for c in s.commands}
    readme_commands = [c for language, body in blocks if language == "sh"
                       for c in shell_commands(body) if "jobstream " in c]  # fmt: skip
    assert readme_commands
    assert [c for c in readme_commands if _words(c) not in tutorial] == []


def _words(command: str) -> tuple[str, ...]:
    """A command's program and subcommands, before its first option or redirection."""
    command = command.split("$(", 1)[-1]
    words = []
    for word in command.split():
        if word.startswith(("-", ">", "#", "&", '"')):
            break
        words.append(word)
    return tuple(words)
