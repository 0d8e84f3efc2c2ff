"""A schema registry stand-in: the endpoints of Confluent's Schema Registry that the
serdes use, as Confluent documents them, over real HTTP on 127.0.0.1, so the real
SchemaRegistryClient talks to it (no registry runs on this machine)."""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from urllib.parse import unquote, urlsplit

FIRST_ID = 0x00010203  # makes the big-endian byte order visible in the frame


class FakeRegistry(ThreadingHTTPServer):
    """Serves on a thread of its own while used as a context manager."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _RegistryHandler)
        self._thread: threading.Thread | None = None
        self.ids: dict[str, int] = {}
        self.subjects: dict[str, list[int]] = {}
        self.requests: list[tuple[str, str]] = []
        self.fail_with: int | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def schema(self, schema_id: int) -> str | None:
        return next((text for text, i in self.ids.items() if i == schema_id), None)

    def add(self, schema: str, subject: str = "test-value") -> int:
        """Register ``schema`` (its JSON text) as a producer would; its id."""
        schema_id = self.ids.setdefault(schema, FIRST_ID + len(self.ids))
        self.subjects.setdefault(subject, []).append(schema_id)
        return schema_id

    def __enter__(self) -> FakeRegistry:
        self._thread = threading.Thread(target=self.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:  # fmt: skip
        self.shutdown()
        self.server_close()
        if self._thread is not None:
            self._thread.join()


class _RegistryHandler(BaseHTTPRequestHandler):
    server: FakeRegistry

    def log_message(self, format: str, *args: object) -> None:  # quiet test output
        pass

    def _reply(self, status: int, body: dict[str, object]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/vnd.schemaregistry.v1+json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _route(self, method: str, pattern: str) -> re.Match[str] | None:
        path = urlsplit(self.path).path
        self.server.requests.append((method, path))
        return re.fullmatch(pattern, path)

    def do_POST(self) -> None:
        match = self._route("POST", r"/subjects/([^/]+)/versions")
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.server.fail_with:
            self._reply(self.server.fail_with, {"error_code": 50001, "message": "told to fail"})
        elif match is None:
            self._reply(404, {"error_code": 404, "message": "HTTP 404 Not Found"})
        else:
            schema_id = self.server.ids.setdefault(body["schema"], FIRST_ID + len(self.server.ids))
            self.server.subjects.setdefault(unquote(match[1]), []).append(schema_id)
            self._reply(200, {"id": schema_id})

    def do_GET(self) -> None:
        match = self._route("GET", r"/schemas/ids/(\d+)")
        text = self.server.schema(int(match[1])) if match else None
        if self.server.fail_with:
            self._reply(self.server.fail_with, {"error_code": 50001, "message": "told to fail"})
        elif text is None:
            self._reply(404, {"error_code": 40403, "message": "Schema not found"})
        else:
            self._reply(200, {"schema": text})




