"""``import jobstream``: the names a user writes against, each documented, each loaded on
first use (docs/adr/0005-one-import-name.md).

jobstream/__init__.py says each name three times, for three readers: ``_PUBLIC`` (where
Python finds it at run time), the ``TYPE_CHECKING`` imports (what mypy and the API
reference read) and ``__all__``. These tests hold the three to one another.
"""

from __future__ import annotations

import ast
import inspect
import subprocess
import sys
from pathlib import Path

import jobstream

SOURCE = Path(jobstream.__file__)
LOADED = {name: getattr(jobstream, name) for name in jobstream._PUBLIC}
"""Each public name, loaded when the module is collected (croniter runs ``file`` once when
it is first imported, which a fast test may not)."""


def _type_checking_imports() -> dict[str, str]:
    """Each name imported under ``if TYPE_CHECKING:`` -> the module it comes from."""
    found: dict[str, str] = {}
    for node in ast.parse(SOURCE.read_text()).body:
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            for stmt in node.body:
                assert isinstance(stmt, ast.ImportFrom), ast.dump(stmt)
                for alias in stmt.names:
                    assert alias.asname == alias.name, f"{alias.name}: re-export it as itself"
                    module = str(stmt.module)
                    public_module = module == "jobstream"
                    found[alias.name] = f"{module}.{alias.name}" if public_module else module
    return found


def test_the_three_lists_of_public_names_agree() -> None:
    public = jobstream._PUBLIC
    assert set(jobstream.__all__) == {*public, "__version__"}
    assert _type_checking_imports() == public


def test_every_public_name_resolves_to_its_module_and_is_documented() -> None:
    for name, value in LOADED.items():
        assert getattr(jobstream, name) is value
        assert inspect.getdoc(value), f"jobstream.{name} has no docstring"
        if not inspect.ismodule(value):
            assert value.__module__ == jobstream._PUBLIC[name], name
    assert inspect.getdoc(jobstream) and jobstream.__version__


def test_an_unknown_name_is_an_attribute_error_naming_it() -> None:
    try:
        jobstream.WorkerApplication  # type: ignore[attr-defined]  # noqa: B018
    except AttributeError as error:
        assert "'WorkerApplication'" in str(error)
    else:
        raise AssertionError("jobstream.WorkerApplication resolved")


def test_a_handler_child_process_loads_neither_the_client_nor_the_records(
        child_processes: None) -> None:  # fmt: skip
    """A handler's child (``--isolation process``) imports the worker's child module, which
    runs jobstream/__init__.py first: the public API must not make it load Kafka or Avro."""
    probe = ("import sys, jobstream._pipeline.worker.child; "
             "print(sorted(m for m in ('confluent_kafka', 'fastavro', 'jobstream.records') "
             "if m in sys.modules))")  # fmt: skip
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=60, check=True)  # fmt: skip
    assert done.stdout.strip() == "[]", done.stdout
