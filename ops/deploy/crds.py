"""KEDA's CustomResourceDefinitions, fetched once so that the manifests that use them are
checked offline: the ScaledObject and TriggerAuthentication schemas as KEDA publishes them
in its Go module (``config/crd/bases``), never written by hand.

``go mod download`` fetches the module from the Go module proxy, checks it against the
checksum database, and the module's ``h1:`` hash is compared with the one pinned here; the
CRD files are then kept in ``~/.cache/jobstream/keda/<version>/``. ``make setup`` runs it
(``jobstream deploy crds``); the tests read the cache and fetch nothing.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

from jobstream._ops.kafka.jars import cache_root
from jobstream._pipeline.errors import ConfigurationError

MODULE = "github.com/kedacore/keda/v2"
VERSION = "v2.21.0"
SUM = "h1:R6z2HZvstK4RLUMxroNACzBj74xGxt3kG59b5Xc+Xps="
"""The module's hash as go.sum records it; a fetched module with another is refused."""
CRDS = {"ScaledObject": "keda.sh_scaledobjects.yaml",
        "TriggerAuthentication": "keda.sh_triggerauthentications.yaml"}  # fmt: skip
"""Kind -> its CRD's file in the module's config/crd/bases."""


def crd_dir(version: str = VERSION) -> Path:
    """Where the CRDs of ``version`` are kept (``jobstream/keda`` beside the Kafka jars)."""
    return cache_root().parent / "keda" / version


def _go() -> str:
    found = shutil.which("go") or ("/usr/local/go/bin/go"
                                   if Path("/usr/local/go/bin/go").is_file() else None)
    if found is None:
        raise ConfigurationError("the Go toolchain is needed to fetch KEDA's CRDs from the Go "
                                 "module proxy (apt-get install golang-go)")  # fmt: skip
    return found


def fetch_crds(*, timeout_s: float = 300.0) -> Path:
    """The folder of KEDA's CRD files, fetched and checked on the first call."""
    target = crd_dir()
    if all((target / name).is_file() for name in CRDS.values()):
        return target
    work = cache_root().parent / "go"
    work.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "GOPATH": str(work), "GOMODCACHE": str(work / "mod"),
           "GOFLAGS": "-modcacherw", "GO111MODULE": "on"}  # fmt: skip
    done = subprocess.run([_go(), "mod", "download", "-json", f"{MODULE}@{VERSION}"],
                          capture_output=True, text=True, timeout=timeout_s, env=env,
                          cwd=work)  # fmt: skip
    fetched = json.loads(done.stdout or "{}")
    if done.returncode != 0 or "Error" in fetched:
        raise ConfigurationError(f"go mod download {MODULE}@{VERSION} failed: "
                                 f"{fetched.get('Error') or done.stderr.strip()}")  # fmt: skip
    if fetched.get("Sum") != SUM:
        raise ConfigurationError(f"{MODULE}@{VERSION} has hash {fetched.get('Sum')}, "
                                 f"not the pinned {SUM}: refused")  # fmt: skip
    bases = Path(fetched["Dir"]) / "config" / "crd" / "bases"
    partial = target.with_name(f"{target.name}.partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    for name in CRDS.values():
        shutil.copy2(bases / name, partial / name)
    shutil.rmtree(target, ignore_errors=True)
    partial.rename(target)
    return target
