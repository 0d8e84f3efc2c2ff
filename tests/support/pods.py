"""The jobstream containers of rendered Kubernetes manifests as local processes, the way
tests/support/compose.py runs docker-compose.yml's services.

What the kubelet would do is done here: the ConfigMap's variables (``envFrom``) and each
container's own, the pod's ordinal where the downward API gives it (the first pod's, 0),
and each volume's mount path, wherever the arguments or variables name it, replaced by a
folder of the test's own. A Secret's value is the test's to give (``given``), as compose
takes a host variable from the shell. Then :func:`~tests.support.compose.localize` gives
each its own ports, as for compose.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from jobstream._ops.deploy.workloads import POD_INDEX
from tests.support.compose import LocalService, localize

WORKLOADS = ("StatefulSet", "Deployment", "Job")


def _config_maps(manifests: list[dict[str, Any]]) -> dict[str, dict[str, str]]:
    return {m["metadata"]["name"]: m.get("data", {}) for m in manifests if m["kind"] == "ConfigMap"}


def _value(variable: dict[str, Any]) -> str | None:
    """A variable's value as the kubelet gives it to the first pod; None for a Secret's."""
    if "value" in variable:
        return str(variable["value"])
    source = variable["valueFrom"]
    if source.get("fieldRef", {}).get("fieldPath") == POD_INDEX:
        return "0"
    if "secretKeyRef" in source:
        return None
    raise AssertionError(f"{variable['name']}: the test cannot resolve {source}")


def _environment(container: dict[str, Any],
                 maps: dict[str, dict[str, str]]) -> dict[str, str | None]:  # fmt: skip
    env: dict[str, str | None] = {}
    for source in container.get("envFrom", []):
        env.update(maps[source["configMapRef"]["name"]])
    env.update({v["name"]: _value(v) for v in container.get("env", [])})
    return env


def jobstream_containers(manifests: list[dict[str, Any]],
                         image: str) -> dict[str, dict[str, Any]]:  # fmt: skip
    """Workload name -> (kind, container) of each workload that runs ``image``."""
    found = {}
    for manifest in manifests:
        if manifest["kind"] not in WORKLOADS:
            continue
        template = manifest["spec"]["template"]
        (container,) = template["spec"]["containers"]
        if container["image"] == image:
            found[manifest["metadata"]["name"]] = {"kind": manifest["kind"], **container}
    return found


def localize_pods(manifests: list[dict[str, Any]], image: str, work: Path,
                  given: Mapping[str, str],
                  added: Mapping[str, str]) -> list[LocalService]:  # fmt: skip
    """Each jobstream container of ``manifests`` as a command line of this machine; a Job's
    runs once (compose's ``restart: "no"``). ``given`` replaces the values of variables the
    containers have, ``added`` is added to every container's."""
    maps = _config_maps(manifests)
    services = {}
    for name, container in jobstream_containers(manifests, image).items():
        folders = {m["mountPath"]: str(work / name / m["name"])
                   for m in container.get("volumeMounts", [])}  # fmt: skip
        for folder in folders.values():
            Path(folder).mkdir(parents=True, exist_ok=True)  # the kubelet makes each volume
        env = {k: folders.get(v, v) if v is not None else None
               for k, v in _environment(container, maps).items()}  # fmt: skip
        env.update(added)
        services[name] = {
            "command": [folders.get(arg, arg) for arg in container["args"]],
            "environment": env,
            "restart": "no" if container["kind"] == "Job" else "always",
        }
    return localize(services, work, given)
