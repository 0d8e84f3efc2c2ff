"""How make test's xdist processes take the modules (tests/support/scheduling.py)."""

from __future__ import annotations

from pathlib import Path

from tests.support.scheduling import ONE_PROCESS_PACKAGES, scope_of

ROOT = Path(__file__).resolve().parents[1]


def test_a_listed_package_is_one_unit_of_work_and_any_other_module_its_own() -> None:
    assert scope_of("tests/keys/test_concurrency_and_rate.py::test_x") == "tests/keys/"
    assert scope_of("tests/keys/test_debounce_and_singleton.py::test_y[1]") == "tests/keys/"
    assert scope_of("tests/test_end_to_end.py::test_z") == "tests/test_end_to_end.py"
    assert scope_of("tests/keysmith/test_a.py::t") == "tests/keysmith/test_a.py"


def test_each_listed_package_exists_and_shares_its_fixtures_in_a_conftest() -> None:
    for package in ONE_PROCESS_PACKAGES:
        assert package.endswith("/"), f"{package}: a folder, so that no module name matches"
        assert (ROOT / package / "conftest.py").is_file(), package
        assert "scope=\"package\"" in (ROOT / package / "conftest.py").read_text(), package
