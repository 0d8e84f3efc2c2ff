"""The event schemas, parsed once per process, current and every released version.

Writers always write the current schema of an event. Readers must also decode what
any released version wrote, so each released writer schema is kept here under its
CRC-64-AVRO fingerprint (the id the single-object encoding puts on the wire) and is
resolved against the current schema of the same event, which is always the reader.

Layout (see schemas/README.md)::

    schemas/io.jobstream.<Name>.avsc                  current version
    schemas/released/<version>/io.jobstream.<Name>.avsc  a released version, kept forever

The package reads them as its data, ``pipeline/serde/avsc`` (see :data:`DEFAULT_SCHEMAS_DIR`).

Shared named types (Priority, JobSpec, ...) live in sibling files; fastavro's
``load_schema`` resolves them by name from the same directory.
"""

from __future__ import annotations

import functools
import json
import logging
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fastavro.schema import fingerprint, load_schema, to_parsing_canonical_form

from jobstream._pipeline.errors import ConfigurationError
from jobstream._pipeline.package_data import package_path

logger = logging.getLogger(__name__)

NAMESPACE = "io.jobstream"

EVENT_NAMES: tuple[str, ...] = (
    "JobSubmitted",
    "JobCancelled",
    "ScheduleChanged",
    "ExecutionRequested",
    "JobLifecycle",
    "RetryScheduled",
    "DeadLettered",
    "WorkerHeartbeat",
    "WorkflowSubmitted",
    "WorkflowCancelled",
    "StepEnded",
    "JobTriggered",
    "CancelRequested",
    "WorkflowSignalled",
    "Checkpoint",
    "SingletonEnded",
)
"""Records that travel on topics; the other .avsc files are types they share."""

CURRENT = "current"
"""The version label of the schemas at the top of the schemas directory."""

# In a checkout pipeline/serde/avsc is a link to the repository's schemas/ (one copy of
# each file in git); a wheel holds the files themselves there.
DEFAULT_SCHEMAS_DIR = package_path("jobstream._pipeline.serde", "avsc")


@dataclass(frozen=True, slots=True)
class WriterSchema:
    """One version of one event's schema, ready for fastavro."""

    name: str
    """Event name without namespace, e.g. ``JobSubmitted``."""
    version: str
    """``current`` or the released version directory name, e.g. ``v1``."""
    parsed: dict[str, Any] = field(repr=False, compare=False)
    """fastavro's parsed schema (named types resolved)."""
    canonical: str = field(repr=False)
    """Avro parsing canonical form: what the fingerprint is computed over."""
    fingerprint: bytes
    """CRC-64-AVRO of ``canonical``, 8 bytes little-endian, as on the wire."""

    @property
    def full_name(self) -> str:
        """Fully qualified record name, also the schema registry subject."""
        return f"{NAMESPACE}.{self.name}"

    def to_json(self) -> str:
        """The full schema as one JSON document, docs and defaults included.

        Named types are defined inline where first used, so the document stands alone:
        this is what a schema registry is given (the canonical form drops defaults,
        which a registry's compatibility check needs).
        """
        return json.dumps(_without_fastavro_keys(self.parsed), separators=(",", ":"))


def _without_fastavro_keys(node: Any) -> Any:
    """fastavro marks parsed schemas with ``__``-prefixed keys that are not Avro."""
    if isinstance(node, dict):
        return {k: _without_fastavro_keys(v) for k, v in node.items() if not k.startswith("__")}
    if isinstance(node, list):
        return [_without_fastavro_keys(v) for v in node]
    return node


def _load(path: Path, name: str, version: str) -> WriterSchema:
    try:
        parsed = load_schema(str(path))
    except Exception as exc:  # fastavro raises several types for a bad file
        raise ConfigurationError(f"cannot load schema {path}: {exc}") from exc
    if not isinstance(parsed, dict) or parsed.get("name") != f"{NAMESPACE}.{name}":
        raise ConfigurationError(f"{path} does not define record {NAMESPACE}.{name}")
    canonical = to_parsing_canonical_form(parsed)
    # fastavro returns the 8 fingerprint bytes in little-endian order as hex.
    fp = bytes.fromhex(fingerprint(canonical, "CRC-64-AVRO"))
    return WriterSchema(name, version, parsed, canonical, fp)


def _version_key(version: str) -> tuple[int, str]:
    """Sort v2 before v10: by the number in the name, then by the name."""
    digits = re.sub(r"\D", "", version)
    return (int(digits) if digits else -1, version)


class EventSchemas:
    """Every event schema under one schemas directory, parsed once.

    Lookups are dictionary reads, cheap enough for the per-message path. Build one
    per process with :func:`event_schemas` rather than calling this directly.
    """

    def __init__(self, schemas_dir: Path | str | None = None) -> None:
        root = Path(schemas_dir) if schemas_dir is not None else DEFAULT_SCHEMAS_DIR
        if not root.is_dir():
            raise ConfigurationError(f"schemas directory not found: {root}")
        self.root = root
        self._current: dict[str, WriterSchema] = {}
        self._released: dict[str, dict[str, WriterSchema]] = {}
        self._by_fingerprint: dict[bytes, WriterSchema] = {}

        for name in EVENT_NAMES:
            path = root / f"{NAMESPACE}.{name}.avsc"
            if not path.is_file():
                raise ConfigurationError(f"missing event schema {path}")
            self._current[name] = self._add(_load(path, name, CURRENT))

        released_root = root / "released"
        versions = (
            sorted((d.name for d in released_root.iterdir() if d.is_dir()), key=_version_key)
            if released_root.is_dir()
            else []
        )
        for version in versions:
            loaded: dict[str, WriterSchema] = {}
            # An event added after a release is simply absent from that release.
            for name in EVENT_NAMES:
                path = released_root / version / f"{NAMESPACE}.{name}.avsc"
                if path.is_file():
                    loaded[name] = self._add(_load(path, name, version))
            self._released[version] = loaded
        logger.debug(
            "loaded %d event schemas, %d released versions, %d distinct fingerprints from %s",
            len(self._current),
            len(self._released),
            len(self._by_fingerprint),
            root,
        )

    def _add(self, schema: WriterSchema) -> WriterSchema:
        """Index by fingerprint; return the entry that stands for this schema.

        A schema unchanged across versions keeps the entry loaded first (current, then
        releases oldest first): its label then names the newest place it appears.
        """
        known = self._by_fingerprint.get(schema.fingerprint)
        if known is None:
            self._by_fingerprint[schema.fingerprint] = schema
            return schema
        if known.canonical != schema.canonical:
            raise ConfigurationError(
                f"CRC-64-AVRO collision between {known.name}@{known.version} and "
                f"{schema.name}@{schema.version}; change either schema"
            )
        return known

    @property
    def names(self) -> tuple[str, ...]:
        return EVENT_NAMES

    @property
    def versions(self) -> tuple[str, ...]:
        """Released version names, oldest first."""
        return tuple(self._released)

    def current(self, name: str) -> WriterSchema:
        """The schema writers use for ``name`` and readers resolve into.

        Raises KeyError for a name that is not an event.
        """
        return self._current[name]

    def released(self, version: str) -> Mapping[str, WriterSchema]:
        """The schemas of one released version, by event name.

        A schema unchanged since is the same object as the current one (see ``_add``).
        """
        return self._released[version]

    def writer_schemas(self) -> Iterator[WriterSchema]:
        """Every distinct writer schema known, current ones first."""
        return iter(self._by_fingerprint.values())


@functools.cache
def _cached(root: Path) -> EventSchemas:
    return EventSchemas(root)


def event_schemas(schemas_dir: Path | str | None = None) -> EventSchemas:
    """The process-wide :class:`EventSchemas` for a directory, loaded on first use."""
    root = Path(schemas_dir) if schemas_dir is not None else DEFAULT_SCHEMAS_DIR
    return _cached(root.resolve())
