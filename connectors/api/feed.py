"""The live feed: documents the view updater changed, handed to each stream subscriber.

The updater publishes from its own thread; each subscriber is an asyncio queue on the
server's event loop, fed with ``call_soon_threadsafe`` so the updater never waits on a
client. A subscriber that falls ``QUEUE_LIMIT`` updates behind is closed (it reconnects
and reads the state again) rather than slowing the views or growing without bound.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from contextlib import suppress
from typing import Any

log = logging.getLogger(__name__)

QUEUE_LIMIT = 10_000

Doc = dict[str, Any]
CLOSED: Doc = {}
"""Put on a subscriber's queue when the feed drops it."""


class Subscription:
    def __init__(self, feed: Feed, sees: Callable[[str], bool]) -> None:
        self.feed = feed
        self.sees = sees
        self.loop = asyncio.get_running_loop()
        self.queue: asyncio.Queue[Doc] = asyncio.Queue()
        self.dropped = False

    def offer(self, docs: list[Doc]) -> None:
        """On the updater's thread: queue what this subscriber may see."""
        visible = [doc for doc in docs if self.sees(doc["owner"])]
        if visible:
            self.loop.call_soon_threadsafe(self._put, visible)

    def _put(self, docs: list[Doc]) -> None:
        if self.dropped:
            return
        if self.queue.qsize() + len(docs) > QUEUE_LIMIT:
            self.dropped = True
            self.feed.unsubscribe(self)
            self.queue.put_nowait(CLOSED)
            log.warning("a stream subscriber fell behind and was closed")
            return
        for doc in docs:
            self.queue.put_nowait(doc)

    async def next(self, timeout_s: float) -> Doc | None:
        """The next update, CLOSED when dropped, None after ``timeout_s`` without one."""
        try:
            return await asyncio.wait_for(self.queue.get(), timeout_s)
        except TimeoutError:
            return None


class Feed:
    """Subscribers to the view updater's changes; ``publish`` is its listener."""

    def __init__(self) -> None:
        self._subscribers: set[Subscription] = set()
        self._lock = threading.Lock()

    def subscribe(self, sees: Callable[[str], bool]) -> Subscription:
        """Call on the event loop; ``sees(owner)`` says which documents to pass on."""
        subscription = Subscription(self, sees)
        with self._lock:
            self._subscribers.add(subscription)
        return subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        with self._lock:
            self._subscribers.discard(subscription)

    def __len__(self) -> int:
        return len(self._subscribers)

    def close(self) -> None:
        """End every subscriber's stream (the server is stopping: its responses end)."""
        with self._lock:
            subscribers, self._subscribers = list(self._subscribers), set()
        for subscription in subscribers:
            with suppress(RuntimeError):  # its loop has closed already: nothing to end
                subscription.loop.call_soon_threadsafe(subscription.queue.put_nowait, CLOSED)

    def publish(self, docs: list[Doc]) -> None:
        with self._lock:
            subscribers = list(self._subscribers)
        for subscription in subscribers:
            try:
                subscription.offer(docs)
            except RuntimeError:  # its loop has closed: the server is stopping
                self.unsubscribe(subscription)
