"""The records the engine passes: one decoded event, as the serde gives it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Event:
    """One decoded record: which event it is and its fields as Avro gives them."""

    name: str
    """Event name without namespace, e.g. ``JobSubmitted``."""
    data: dict[str, Any]
    """Field values; enums are symbol strings, optional records are dicts or None."""
