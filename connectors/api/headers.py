"""The headers every response of the API and the dashboard carries: the origin runs only
its own code.

The dashboard keeps an owner's token in this origin's ``sessionStorage``, so a script from
anywhere else, a frame around its pages or a body read as another type than sent could
reach it. One policy, set here and nowhere else, on every response (pages, assets, JSON,
streams and errors alike): scripts, styles, fonts and connections from this origin only
(``data:`` images too, which Swagger UI's stylesheet holds), no plugin, no ``<base>``, no
frame around a page (``frame-ancestors`` and, for older browsers, ``X-Frame-Options``), no
type sniffing and no referrer. The dashboard needs no inline script or style attribute.
"""

from __future__ import annotations

from collections.abc import Mapping

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

CONTENT_SECURITY_POLICY = "; ".join((
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    "connect-src 'self'",
    "font-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
))  # fmt: skip

HEADERS: Mapping[str, str] = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


class SecurityHeaders:
    """Sets :data:`HEADERS` on every HTTP response, over any a handler set."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in HEADERS.items():
                    headers[name] = value
            await send(message)

        await self.app(scope, receive, send_with_headers)
