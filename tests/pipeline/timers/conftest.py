"""The timers' tests drive the processor with no broker: ``driver`` fires each job on its
instant; a module that needs other settings defines its own."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.timers import TimersDriver, driving


@pytest.fixture
def driver(tmp_path: Path) -> Iterator[TimersDriver]:
    yield from driving(tmp_path)
