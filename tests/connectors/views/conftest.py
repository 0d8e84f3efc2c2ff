"""The views' tests: a view store in the test's own folder, closed after it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from jobstream._connectors.views.store import ViewStore


@pytest.fixture
def store(tmp_path: Path) -> Iterator[ViewStore]:
    opened = ViewStore(tmp_path / "views")
    yield opened
    opened.close()
