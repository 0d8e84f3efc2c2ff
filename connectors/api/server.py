"""The API process: the app served by uvicorn, the views kept up to date by a child.

The view updater runs in a process of its own (connectors/views/process.py) and the API
reads the views it writes. :class:`ApiServer` starts both and stops both; ``jobstream
api`` runs one until a signal, and the tests run one on a free loopback port.
"""

from __future__ import annotations

import logging
import threading
import time
from types import TracebackType

import uvicorn

from jobstream._connectors.api.app import create_app
from jobstream._connectors.api.auth import TokenTable
from jobstream._connectors.api.metrics import ViewGauges
from jobstream._connectors.api.producer import AsyncIntake
from jobstream._connectors.api.services import Services
from jobstream._connectors.api.settings import ApiSettings
from jobstream._connectors.views.process import UpdaterProcess
from jobstream._pipeline.config import Settings
from jobstream._pipeline.errors import JobstreamError
from jobstream._pipeline.quotas.topic import QuotaBoard, QuotasFollower

log = logging.getLogger(__name__)

QUOTAS_WAIT_S = 10.0
"""How long the server waits for jobs.quotas to be read before it serves."""


class ApiServer:
    """The view updater's process, the views and the HTTP server, started and stopped
    together."""

    def __init__(self, settings: Settings, api: ApiSettings) -> None:
        self.settings = settings
        self.api = api
        self.updater = UpdaterProcess(settings, api.view_dir, retention_ms=api.view_retention)
        self.tokens = TokenTable(api.api_tokens, api.api_admin_tokens)
        if not len(self.tokens):
            log.warning("no API tokens configured (JOBSTREAM_API_TOKENS): every request "
                        "under /api/v1 is refused")  # fmt: skip
        self.quota_board = QuotaBoard()
        self.quotas = QuotasFollower(settings, self.quota_board)
        self.services: Services | None = None
        self.gauges: ViewGauges | None = None
        self._server: uvicorn.Server | None = None
        self._http: threading.Thread | None = None
        self.port = 0

    def start(self, *, timeout_s: float = 30.0) -> ApiServer:
        """Start the view updater and open its views (JobstreamError when a topic is
        missing), read the quotas, then serve."""
        self.quotas.start()
        try:
            store = self.updater.open()
        except JobstreamError:
            self.updater.close()
            self.quotas.stop()
            raise
        self.services = Services(self.settings, self.api, store, AsyncIntake(self.settings),
                                 self.tokens, self.updater,
                                 quota_board=self.quota_board)  # fmt: skip
        if not self.quota_board.ready.wait(QUOTAS_WAIT_S):
            log.warning("jobs.quotas not read yet: the default quotas apply to every owner "
                        "until it is")  # fmt: skip
        self.updater.listeners.append(self.services.publish)
        self.gauges = ViewGauges(store, stale_after_ms=self.api.worker_stale_after)
        self.gauges.install()
        self.app = create_app(self.services)
        config = uvicorn.Config(self.app, host=self.api.api_host, port=self.api.api_port,
                                log_config=None, access_log=False, lifespan="off")  # fmt: skip
        self._server = uvicorn.Server(config)
        self._http = threading.Thread(target=self._server.run, name="http", daemon=True)
        self._http.start()
        deadline = time.monotonic() + timeout_s
        while not self._server.started:
            if not self._http.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise JobstreamError(f"the API did not start on {self.api.api_host}:"
                                     f"{self.api.api_port}")  # fmt: skip
            time.sleep(0.02)
        self.port = self._server.servers[0].sockets[0].getsockname()[1]
        log.info("API serving", extra={"url": self.url, "views": str(self.api.view_dir)})
        return self

    @property
    def url(self) -> str:
        return f"http://{self.api.api_host}:{self.port}"

    def wait(self, stop: threading.Event) -> None:
        while not stop.wait(0.5):
            if self._http is not None and not self._http.is_alive():
                raise JobstreamError("the HTTP server stopped")

    def stop(self) -> None:
        if self.gauges is not None:
            self.gauges.uninstall()  # before the views close
        self.updater.stop_soon()  # it closes its files while the HTTP server stops
        if self.services is not None:
            self.services.feed.close()  # else uvicorn waits for the open streams to end
        if self._server is not None:
            self._server.should_exit = True
        if self._http is not None:
            self._http.join(10)
        self.updater.close()
        self.quotas.stop()
        if self.services is not None:
            self.services.intake.close()

    def __enter__(self) -> ApiServer:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:  # fmt: skip
        self.stop()
