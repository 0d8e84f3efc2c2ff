"""The API's reference page, ``/docs``: Swagger UI over ``/openapi.json``, from this origin.

Swagger UI's files come from the fastapi-offline package (pinned in pyproject.toml), not
from a CDN: this origin holds the dashboard's token, so it runs only code that shipped with
jobstream. FastAPI's own page starts Swagger UI with an inline script, which the
Content-Security-Policy (connectors/api/headers.py) refuses, so this page loads a starter
script of its own. ReDoc is not served: it injects ``<style>`` elements, which the policy
refuses too.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import HTMLResponse, Response
from fastapi.staticfiles import StaticFiles

ASSETS = Path(str(files("fastapi_offline") / "static"))
"""swagger-ui-bundle.js, swagger-ui.css and favicon.png, as fastapi-offline ships them."""

_PAGE = """<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>{title} API</title>
  <link rel="icon" href="/docs/assets/favicon.png">
  <link rel="stylesheet" href="/docs/assets/swagger-ui.css">
  <script src="/docs/assets/swagger-ui-bundle.js"></script>
  <script src="/docs/start.js" defer></script>
</head>
<body><div id="swagger-ui"></div></body>
</html>
"""

# validatorUrl null: Swagger UI would otherwise send the document to a public validator.
_START = """SwaggerUIBundle({
  url: "/openapi.json",
  dom_id: "#swagger-ui",
  validatorUrl: null,
  deepLinking: true,
  presets: [SwaggerUIBundle.presets.apis],
  layout: "BaseLayout",
});
"""


def mount(app: FastAPI) -> None:
    """Serve the page at ``/docs``, its starter and Swagger UI's files under ``/docs``."""
    page = _PAGE.format(title=app.title)

    @app.get("/docs", include_in_schema=False)
    def docs() -> HTMLResponse:
        return HTMLResponse(page, headers={"Cache-Control": "no-cache"})

    @app.get("/docs/start.js", include_in_schema=False)
    def start() -> Response:
        return Response(_START, media_type="text/javascript")

    app.mount("/docs/assets", StaticFiles(directory=ASSETS), name="docs-assets")
