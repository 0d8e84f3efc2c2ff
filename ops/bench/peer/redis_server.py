"""A throw-away ``redis-server``: the Celery peer's broker, started and stopped per run.

Bound to 127.0.0.1 on the given port, working in the run's folder, with persistence off
(``--save "" --appendonly no``): the benchmark measures a broker that keeps messages in
memory only, which is Redis's fastest configuration and its most common one for Celery.
"""

from __future__ import annotations

import logging
import shutil
import signal
import socket
import subprocess
from pathlib import Path

from jobstream._ops.bench.peer.errors import PeerError
from jobstream._ops.bench.peer.procs import ChildProcess

log = logging.getLogger(__name__)

HOST = "127.0.0.1"


def ping(port: int, timeout_s: float = 1.0) -> bool:
    """Whether a Redis server on ``port`` answers ``PING`` (the inline protocol)."""
    try:
        with socket.create_connection((HOST, port), timeout=timeout_s) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(64).startswith(b"+PONG")
    except OSError:
        return False


class RedisServer(ChildProcess):
    """One ``redis-server`` child process; use as a context manager, or start()/stop()."""

    what = "redis-server"

    def __init__(self, port: int, folder: Path) -> None:
        super().__init__(folder / "redis.log")
        self.port = port
        self.folder = folder

    def start(self, timeout_s: float = 15.0) -> RedisServer:
        """Start the server and return once it answers PING."""
        binary = shutil.which("redis-server")
        if binary is None:
            raise PeerError("redis-server is not on PATH; run ensure_installed() first")
        if ping(self.port, 0.2):
            raise PeerError(f"something already answers PING on {HOST}:{self.port}")
        self.folder.mkdir(parents=True, exist_ok=True)
        command = [binary, "--port", str(self.port), "--bind", HOST, "--dir", str(self.folder),
                   "--save", "", "--appendonly", "no", "--daemonize", "no"]  # fmt: skip
        log.info("starting redis-server on port %d in %s", self.port, self.folder)
        with open(self.log_path, "ab") as out:
            self.process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
        self.wait_ready(lambda: ping(self.port, 0.5), timeout_s=timeout_s, poll_s=0.05)
        return self

    def stop(self) -> None:
        """SIGTERM (nothing to save, so it exits at once), SIGKILL after 10 s."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            log.warning("redis-server ignored SIGTERM for 10 s; killing it")
            self.process.kill()
            self.process.wait()

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
