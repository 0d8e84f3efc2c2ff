"""bounded(): a librdkafka call that outlives its own timeout is given up, not waited on."""

from __future__ import annotations

import threading
import time

import pytest
from confluent_kafka import KafkaError, KafkaException

from jobstream._pipeline.kafka.commit import bounded, is_abortable


def test_a_call_blocked_past_its_timeout_raises_a_fatal_timeout() -> None:
    release = threading.Event()
    started = time.monotonic()
    with pytest.raises(KafkaException) as raised:
        bounded(lambda: release.wait(30) and None, 0.1, "send_offsets_to_transaction",
                grace_s=0.2)  # fmt: skip
    waited = time.monotonic() - started
    release.set()
    error = raised.value.args[0]
    assert (error.code(), error.fatal()) == (KafkaError._TIMED_OUT, True)
    assert "send_offsets_to_transaction" in error.str()
    assert not is_abortable(raised.value), "a stuck producer is replaced, not aborted"
    assert 0.3 <= waited < 5


def test_a_call_that_returns_or_raises_in_time_is_passed_through() -> None:
    seen: list[int] = []
    bounded(lambda: seen.append(1), 1.0, "call", grace_s=0.1)
    assert seen == [1]

    def refuse() -> None:
        raise KafkaException(KafkaError(KafkaError._STATE, "no", txn_requires_abort=True))

    with pytest.raises(KafkaException) as raised:
        bounded(refuse, 1.0, "call", grace_s=0.1)
    assert is_abortable(raised.value)
