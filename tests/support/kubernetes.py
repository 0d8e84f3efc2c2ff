"""Kubernetes manifests checked as an API server would, with no cluster and no network:
the core kinds against the API's own JSON schemas (``kubernetes-validate`` bundles them,
strict: an unknown field is an error), KEDA's kinds against the openAPI schema of KEDA's
CRDs (``jobstream deploy crds`` fetched them at set-up, ops/deploy/crds.py)."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import kubernetes_validate
import yaml
from jsonschema import Draft4Validator

from jobstream._ops.deploy.crds import CRDS, crd_dir
from tests.support.tools import unavailable

KUBERNETES = "1.34.0"
"""The API version checked against; the StatefulSets' pod-index label needs 1.28 or later."""


def strict(schema: Any) -> Any:
    """``schema`` with unknown fields refused wherever it lists an object's fields, as
    ``kubectl apply --validate=strict`` refuses them (the API server would prune them
    silently, a typo lost)."""
    if isinstance(schema, list):
        return [strict(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    found = {key: strict(value) for key, value in schema.items()}
    if ("properties" in found and "additionalProperties" not in found
            and not found.get("x-kubernetes-preserve-unknown-fields")):  # fmt: skip
        found["additionalProperties"] = False
    return found


@cache
def crd_validators() -> dict[tuple[str, str], Draft4Validator]:
    """(apiVersion, kind) -> the validator of each KEDA kind, from the cached CRDs."""
    folder: Path = crd_dir()
    if not all((folder / name).is_file() for name in CRDS.values()):
        unavailable(f"KEDA's CRDs are not in {folder}: run `jobstream deploy crds` "
                    "(make setup does)")  # fmt: skip
    validators = {}
    for name in CRDS.values():
        crd = yaml.safe_load((folder / name).read_text())
        group = crd["spec"]["group"]
        for version in crd["spec"]["versions"]:
            key = (f"{group}/{version['name']}", crd["spec"]["names"]["kind"])
            validators[key] = Draft4Validator(strict(version["schema"]["openAPIV3Schema"]))
    return validators


def problems(manifest: dict[str, Any]) -> list[str]:
    """What the API server would refuse in ``manifest`` (nothing: it is valid)."""
    where = f"{manifest.get('kind')}/{manifest.get('metadata', {}).get('name')}"
    key = (manifest.get("apiVersion", ""), manifest.get("kind", ""))
    if key[0].startswith("keda.sh/"):
        if key not in crd_validators():
            return [f"{where}: no KEDA CRD defines {key}"]
        return [f"{where}: {'.'.join(map(str, e.absolute_path))}: {e.message}"
                for e in crd_validators()[key].iter_errors(manifest)]  # fmt: skip
    try:
        kubernetes_validate.validate(manifest, KUBERNETES, strict=True)
    except kubernetes_validate.ValidationError as exc:
        return [f"{where}: {'.'.join(map(str, exc.path))}: {exc.message}"]
    except kubernetes_validate.SchemaNotFoundError as exc:
        return [f"{where}: {exc}"]
    return []
