"""A run's saved progress: ``ctx.checkpoint(state)`` in, ``ctx.resume_from`` on the next attempt.

A handler saves a JSON value, or bytes, of at most :data:`MAX_CHECKPOINT_BYTES` once
encoded; it is checked and encoded here, in the handler's thread (or child process), so a
bad one fails the handler's own call with an InvalidArgumentError naming ``state``. The
worker takes the latest one with the run's next progress report (at most one per
``--progress-interval``, pipeline/worker/progress.py) and writes it in the lane's next
transaction twice: on jobs.checkpoints (keyed by job id, compacted) and on the HEARTBEAT
that carries it on jobs.events, which the status processor keeps for a LOST. The run's
failure carries its latest checkpoint to the retry router, which puts it on the retry,
whose ExecutionRequested hands it to the next attempt (docs/adr/0006-checkpoints.md).

Pure and free of the records' module at import time: a process-isolated handler's child
saves checkpoints with only this module and the context loaded.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from jobstream._pipeline.errors import InvalidArgumentError, ValidationError

if TYPE_CHECKING:
    from jobstream._pipeline.model.records import Checkpoint, ExecutionRequested

MAX_CHECKPOINT_BYTES = 64 * 1024
"""The most a checkpoint may hold, encoded (its JSON text, or its bytes): it travels on a
HEARTBEAT, a failure, a retry and the next execution, so it is progress, not the data."""


@dataclass(frozen=True, slots=True)
class CheckpointReport:
    """One ``ctx.checkpoint`` of a handler, encoded; a process-isolated run's child sends
    it to the worker as it is."""

    state: bytes
    """The JSON text of the value saved, or the bytes saved."""
    json: bool
    """Whether ``state`` is JSON text."""
    at_ms: int
    """When the handler saved it (epoch ms, the worker's clock)."""


def encode_state(state: object) -> tuple[bytes, bool]:
    """``state`` as checkpoint bytes and whether they are JSON: bytes as they are, any
    other value as JSON. InvalidArgumentError naming ``state`` for a value that is not
    JSON (nor bytes) or that takes more than :data:`MAX_CHECKPOINT_BYTES`."""
    if isinstance(state, bytes | bytearray | memoryview):
        encoded, is_json = bytes(state), False
    else:
        try:
            encoded, is_json = orjson.dumps(state), True
        except TypeError as exc:  # orjson.JSONEncodeError is a TypeError
            raise InvalidArgumentError("state", f"expected bytes or a JSON value: {exc}") from exc
    if len(encoded) > MAX_CHECKPOINT_BYTES:
        raise InvalidArgumentError(
            "state", f"{len(encoded):,} bytes encoded, more than the "
            f"{MAX_CHECKPOINT_BYTES:,} a checkpoint may hold: save where the work is, not the work"
        )  # fmt: skip
    return encoded, is_json


def resume_value(checkpoint: Checkpoint | None) -> Any:
    """What a handler resumes from: the value its earlier attempt saved (bytes as bytes),
    None when none saved one."""
    return None if checkpoint is None else decode_state(checkpoint.state, checkpoint.json)


def decode_state(state: bytes, is_json: bool) -> Any:
    """The value :func:`encode_state` encoded; ValidationError for JSON text that is not
    (a checkpoint written by another client)."""
    if not is_json:
        return state
    try:
        return orjson.loads(state)
    except orjson.JSONDecodeError as exc:
        raise ValidationError("resume_from.state", f"not valid JSON: {exc}") from exc


def checkpoint_record(report: CheckpointReport, execution: ExecutionRequested) -> Checkpoint:
    """The Checkpoint record of ``report``, saved by the run of ``execution``."""
    from jobstream._pipeline.model.records import Checkpoint

    return Checkpoint(state=report.state, json=report.json, attempt=execution.attempt,
                      execution_id=execution.execution_id, at_ms=report.at_ms)  # fmt: skip
