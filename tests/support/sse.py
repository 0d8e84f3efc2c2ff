"""A server-sent events client for tests: reads a stream on a thread into a list."""

from __future__ import annotations

import threading
from types import TracebackType
from typing import Any

import httpx
import orjson

from tests.support.waiting import wait_for


class EventStream:
    """``GET path`` with ``token``; :attr:`events` holds (event, data) as they arrive."""

    def __init__(self, base_url: str, token: str, path: str = "/api/v1/stream") -> None:
        self.events: list[tuple[str, Any]] = []
        self.status: int | None = None
        self._client = httpx.Client(base_url=base_url, timeout=httpx.Timeout(30, read=None),
                                    headers={"Authorization": f"Bearer {token}"})  # fmt: skip
        self._path = path
        self._thread = threading.Thread(target=self._read, name="sse", daemon=True)

    def _read(self) -> None:
        try:
            with self._client.stream("GET", self._path) as response:
                self.status = response.status_code
                name, data = "message", []
                for line in response.iter_lines():
                    if line.startswith("event: "):
                        name = line[7:]
                    elif line.startswith("data: "):
                        data.append(line[6:])
                    elif line == "" and data:
                        self.events.append((name, orjson.loads("\n".join(data))))
                        name, data = "message", []
        except httpx.HTTPError:
            pass  # closed by the test

    def statuses(self) -> list[dict[str, Any]]:
        return [data for name, data in self.events if name == "status"]

    def __enter__(self) -> EventStream:
        self._thread.start()
        wait_for(lambda: self.status is not None and (self.status != 200 or self.events),
                 what="the stream to answer")  # fmt: skip
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:  # fmt: skip
        self._client.close()
        self._thread.join(10)
