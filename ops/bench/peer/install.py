"""Installs what the Celery peer needs, by the benchmark's own set-up.

Celery and Redis are what jobstream is compared with, not what it runs on, so they are
not project dependencies: ``jobstream bench`` installs them on first use.

- ``redis-server``: Debian's package, with ``apt-get install -y redis-server`` when it is
  not on PATH; ``apt-get update`` runs only if that install fails (a fresh machine's
  package lists may be missing or stale), then the install is tried once more.
- ``celery[redis]``: pip into the running interpreter when ``import celery`` fails, so the
  worker (``sys.executable -m celery``) and the submitting side see the same version.
"""

from __future__ import annotations

import importlib
import logging
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence

from jobstream._ops.bench.peer.errors import PeerInstallError

log = logging.getLogger(__name__)

CELERY_REQUIREMENT = "celery[redis]>=5.7,<6"
"""The range the peer was verified with (5.7.0 measured). 5.7 because its kombu is the
first with ``Producer.batch``, which the submitting side uses as jobstream's client uses
``submit_many``: many messages in one round trip to the broker."""
CELERY_RANGE = ((5, 7), (6, 0))
REDIS_PACKAGE = "redis-server"


def _run(command: Sequence[str]) -> subprocess.CompletedProcess[str]:
    log.info("running %s", " ".join(command))
    # No debconf questions: the benchmark runs unattended, in CI too.
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    return subprocess.run(list(command), capture_output=True, text=True, check=False, env=env)


def _tail(result: subprocess.CompletedProcess[str], lines: int = 15) -> str:
    text = (result.stderr or result.stdout or "").strip().splitlines()
    return "\n".join(text[-lines:])


def ensure_redis_server(console_print: Callable[[str], None]) -> str:
    """The path of ``redis-server``, installed with apt-get first if it is missing."""
    found = shutil.which("redis-server")
    if found:
        return found
    if shutil.which("apt-get") is None:
        raise PeerInstallError("redis-server is not on PATH and there is no apt-get to "
                               "install it with; install Redis by hand")  # fmt: skip
    console_print(f"Installing {REDIS_PACKAGE} with apt-get (once)…")
    install = ["apt-get", "install", "-y", REDIS_PACKAGE]
    result = _run(install)
    if result.returncode != 0:
        log.info("apt-get install failed, updating the package lists: %s", _tail(result, 3))
        update = _run(["apt-get", "update"])
        if update.returncode != 0:
            raise PeerInstallError(f"apt-get update failed ({update.returncode}):\n"
                                   f"{_tail(update)}")  # fmt: skip
        result = _run(install)
    found = shutil.which("redis-server")
    if result.returncode != 0 or found is None:
        raise PeerInstallError(f"apt-get install {REDIS_PACKAGE} failed "
                               f"({result.returncode}):\n{_tail(result)}")  # fmt: skip
    return found


def _celery_usable() -> bool:
    """Whether celery in :data:`CELERY_RANGE` and the redis client both import."""
    try:
        importlib.import_module("redis")
        celery = importlib.import_module("celery")
    except ImportError:
        return False
    version = tuple(int(part) for part in celery.__version__.split(".")[:2])
    low, high = CELERY_RANGE
    return low <= version < high


def ensure_celery(console_print: Callable[[str], None]) -> None:
    """Make ``import celery`` (with its Redis transport) work in this interpreter."""
    if _celery_usable():
        return
    console_print(f"Installing {CELERY_REQUIREMENT} with pip (once)…")
    result = _run([sys.executable, "-m", "pip", "install", "--quiet", CELERY_REQUIREMENT])
    if result.returncode != 0:
        raise PeerInstallError(f"pip install {CELERY_REQUIREMENT!r} failed "
                               f"({result.returncode}):\n{_tail(result)}")  # fmt: skip
    importlib.invalidate_caches()
    if not _celery_usable():
        raise PeerInstallError(f"pip installed {CELERY_REQUIREMENT!r} but this interpreter "
                               "still does not import it (an older celery was imported "
                               "already? run again)")  # fmt: skip


def ensure_installed(console_print: Callable[[str], None] = print) -> None:
    """Install redis-server and celery[redis] where they are missing; say so when doing it.

    ``console_print`` tells the person running the benchmark why it pauses (a rich
    console's ``print`` or plain ``print``). Raises :class:`PeerInstallError` naming what
    failed.
    """
    ensure_redis_server(console_print)
    ensure_celery(console_print)
