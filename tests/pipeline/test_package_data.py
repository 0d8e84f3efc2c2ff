"""The package data: found beside its module, the schemas being the repository's own."""

from __future__ import annotations

import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from jobstream._pipeline.errors import ConfigurationError
from jobstream._pipeline.package_data import package_path
from jobstream._pipeline.serde.schemas import DEFAULT_SCHEMAS_DIR

ROOT = Path(__file__).resolve().parents[2]


def test_the_schemas_the_package_reads_are_the_repository_schemas_folder() -> None:
    assert DEFAULT_SCHEMAS_DIR.resolve() == ROOT / "schemas"
    assert (DEFAULT_SCHEMAS_DIR / "io.jobstream.JobSubmitted.avsc").is_file()


def test_a_resource_is_a_path_beside_its_module() -> None:
    pom = package_path("jobstream._ops.kafka", "pom.xml")
    assert pom.resolve() == ROOT / "ops" / "kafka" / "pom.xml" and pom.is_file()


@pytest.fixture
def zipped_package(tmp_path: Path) -> Iterator[str]:
    archive = tmp_path / "zipped.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("jobstream_zipped/__init__.py", "")
        zipped.writestr("jobstream_zipped/data.txt", "x")
    sys.path.insert(0, str(archive))
    try:
        yield "jobstream_zipped"
    finally:
        sys.path.remove(str(archive))
        sys.modules.pop("jobstream_zipped", None)


def test_a_package_imported_from_a_zip_is_refused_with_the_reason(zipped_package: str) -> None:
    with pytest.raises(ConfigurationError, match="install it with pip"):
        package_path(zipped_package, "data.txt")
