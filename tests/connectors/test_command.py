"""``jobstream api`` as a process: it serves, logs JSON lines, stops on SIGTERM; then
``jobstream replay views`` rebuilds its views from offset zero."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import orjson

from jobstream._connectors.api.auth import hash_token
from jobstream._connectors.views import ViewStore, list_jobs
from jobstream._pipeline.config import Settings
from jobstream._pipeline.topics import Topics
from tests.support.pipeline import process_env
from tests.support.waiting import wait_for


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _healthy(url: str) -> bool:
    try:
        return httpx.get(f"{url}/healthz", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def test_the_api_process_serves_and_its_views_replay(
    settings: Settings, topics: Topics, tmp_path: Path
) -> None:
    port = _free_port()
    env = {**process_env(settings), "JOBSTREAM_API_PORT": str(port),
           "JOBSTREAM_VIEW_DIR": str(tmp_path / "views"),
           "JOBSTREAM_API_TOKENS": orjson.dumps({hash_token("t"): "acme"}).decode()}  # fmt: skip
    log = tmp_path / "api.log"
    with open(log, "wb") as out:
        process = subprocess.Popen([sys.executable, "-m", "jobstream", "api"], env=env,
                                   stdout=out, stderr=subprocess.STDOUT)  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: _healthy(url) or process.poll() is not None, what="the API")
        assert process.poll() is None, log.read_text()
        auth = {"Authorization": "Bearer t"}
        job_id = httpx.post(f"{url}/api/v1/jobs", json={"job_type": "data.process"},
                            headers=auth).json()["job_id"]  # fmt: skip
        wait_for(lambda: httpx.get(f"{url}/api/v1/jobs", headers=auth).json()["items"],
                 what="the job in the views")  # fmt: skip
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(30) == 0, log.read_text()
    lines = [orjson.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]
    assert any(line.get("path") == "/api/v1/jobs" for line in lines)

    replay = subprocess.run([sys.executable, "-m", "jobstream", "replay", "views"], env=env,
                            capture_output=True, text=True, timeout=120)  # fmt: skip
    assert replay.returncode == 0, replay.stderr
    assert "records folded" in replay.stderr
    store = ViewStore(tmp_path / "views")
    try:
        assert [doc["job_id"] for doc in list_jobs(store, {"owner": "acme"}).items] == [job_id]
    finally:
        store.close()
