"""A path into JSON-shaped data (objects by name, lists by index): how a key's template
reads a job's params (pipeline/model/keys.py) and a trigger reads its record
(pipeline/triggers/decode.py). Each caller words its own error."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def walk(node: Any, steps: Sequence[str]) -> Any:
    """The value at ``steps`` below ``node``; LookupError whose argument is the index of
    the first step ``node`` lacks."""
    for i, step in enumerate(steps):
        if isinstance(node, Mapping) and step in node:
            node = node[step]
        elif isinstance(node, list) and step.isdigit() and int(step) < len(node):
            node = node[int(step)]
        else:
            raise LookupError(i)
    return node
