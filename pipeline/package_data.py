"""The files that ship inside the packages, found through ``importlib.resources``.

The schemas, the dashboard's assets, the broker's pom and log4j2 configuration, the demo
data: each is listed under ``[tool.setuptools.package-data]`` in pyproject.toml and read
beside the module that uses it, so a wheel installed anywhere finds them as a checkout
does. Every caller hands the path to something that reads the filesystem itself (fastavro
resolving named types from sibling files, Starlette, Maven, the JVM, a child's
PYTHONPATH), so a resource has to be a real path: pip installs a wheel unpacked, and an
install from a zip is refused here with a message rather than failing further on.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from jobstream._pipeline.errors import ConfigurationError


def package_path(package: str, name: str) -> Path:
    """The file or folder ``name`` shipped inside ``package`` (a dotted name)."""
    found = resources.files(package).joinpath(name)
    if not isinstance(found, Path):
        raise ConfigurationError(
            f"{package}: {name} is not a file on disk ({found!r}); jobstream reads its "
            "package data from the filesystem: install it with pip, not as a zip"
        )
    return found
