"""How a store's handover ends and how its receivers hear of it, the same for the timers'
and the status processor's stores (docs/adr/0011-partitions-that-grow.md, 0013).

An old partition whose scan is done records that it has settled and sends a SETTLED
marker to each partition that may receive from it; a partition that hears one records the
source, once its layout is for the marker's count. Pure: no Kafka.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Protocol

from jobstream._pipeline.growth.layout import (
    SETTLED_HEADER,
    Layout,
    read_settled_marker,
    receivers,
    settled_marker,
)
from jobstream._pipeline.runtime.processor import Output

log = logging.getLogger(__name__)


class LaidOut(Protocol):
    """A partition's state that keeps its layout record."""

    @property
    def partition(self) -> int: ...

    def set_layout(self, layout: Layout) -> None: ...


def waits(layouts: Mapping[int, Layout], partition: int) -> bool:
    """Whether ``partition`` must not read its input yet: a source has not settled."""
    layout = layouts.get(partition)
    return layout is not None and bool(layout.waits_for(partition))


def settle(state: LaidOut, layout: Layout, topic: str, what: str) -> list[Output]:
    """The scan of ``state``'s partition is done: record it settled, and tell each partition
    that may receive from it on ``topic`` (``what``: the store, in the log line)."""
    p = state.partition
    state.set_layout(Layout(count=layout.count, old=layout.old, heard=layout.heard))
    marker = settled_marker(p, layout.count)
    waiting = receivers(p, layout.old, layout.count)
    log.info("%s partition %d settled for %d partitions; telling %s", what, p, layout.count,
             waiting)  # fmt: skip
    return [Output(topic, None, b"", q, ((SETTLED_HEADER, marker),), urgent=True)
            for q in waiting]  # fmt: skip


def hear(state: LaidOut, layout: Layout, marker: bytes, what: str) -> None:
    """A SETTLED ``marker`` reached ``state``'s partition, laid out as ``layout``: record its
    source, once the layout is for the marker's count (heard before the runner told this
    partition of the grow, it grows the layout first)."""
    source, count = read_settled_marker(marker)
    if count > layout.count:
        layout = layout.grown(count)
    if count == layout.count:
        state.set_layout(layout.hear(source))
        log.info("%s partition %d heard partition %d settled", what, state.partition,
                 source)  # fmt: skip
