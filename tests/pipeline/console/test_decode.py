"""Records decoded to JSON with no broker: a checkpoint's bytes as ``base64:<...>``."""

from __future__ import annotations

import base64

import orjson

from jobstream._pipeline.console.decode import bytes_as_json, decode_value
from jobstream._pipeline.model.records import Checkpoint, Event
from tests.support.pipeline import DESERIALIZE, SERIALIZE


def test_a_checkpoint_reads_as_json_its_state_in_base64() -> None:
    saved = Checkpoint(state=b'{"done":50}', json=True, attempt=1, execution_id="x1", at_ms=5)
    line = orjson.loads(orjson.dumps(decode_value(SERIALIZE(Event.of(saved)), DESERIALIZE),
                                     default=bytes_as_json))  # fmt: skip
    assert line == {"event": "Checkpoint", "value": {
        "state": "base64:" + base64.b64encode(b'{"done":50}').decode(), "json": True,
        "attempt": 1, "execution_id": "x1", "at_ms": 5}}  # fmt: skip
