"""Every kustomization under deploy/ renders, validates offline, and says what the server needs.

Schemas: kubernetes-validate (strict: unknown fields fail) for built-in kinds, the committed
CRD schemas (closed the same way) for KServe, ModelMesh and ServiceMonitor kinds. The rest
checks what a schema cannot: probes, ports, grace period against the drain arguments,
security, the autoscaler chain, the KServe runtime's protocols, formats and annotations.
"""

from __future__ import annotations

import re
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from .manifests import (
    DEPLOY,
    ROOT,
    container,
    find,
    flag,
    kustomizations,
    render,
    serve_args,
    validate,
)

#: Files under deploy/ that are not whole resources (kustomizations, patches) or not YAML.
PARTIAL = {"kustomization.yaml", "gpu-resources.yaml"}


def _names(folder: Path) -> list[str]:
    return [str(p.relative_to(DEPLOY)) for p in kustomizations()]


@pytest.mark.parametrize("folder", _names(DEPLOY))
def test_kustomization_renders_and_validates(folder):
    documents = render(DEPLOY / folder)
    assert documents, f"{folder} rendered nothing"
    for document in documents:
        validate(document)


def test_every_resource_file_is_rendered_by_some_kustomization():
    rendered = {(d["kind"], d["metadata"]["name"]) for f in kustomizations() for d in render(f)}
    for path in DEPLOY.rglob("*.yaml"):
        if path.name in PARTIAL:
            continue
        for document in yaml.safe_load_all(path.read_text()):
            assert (document["kind"], document["metadata"]["name"]) in rendered, (
                f"{path} is in no kustomization"
            )


def test_validation_refuses_what_a_cluster_would():
    deployment = find("overlays/cpu", "Deployment")
    typo = {**deployment, "spec": {**deployment["spec"], "replica": 2}}
    with pytest.raises(kubernetes_validate.ValidationError):
        validate(typo)
    runtime = find("kserve", "ClusterServingRuntime", "modelplatform")
    wrong = {**runtime, "spec": {**runtime["spec"], "protocolVersions": "v2"}}
    with pytest.raises(AssertionError, match="protocolVersions"):
        validate(wrong)
    unknown = {**runtime, "spec": {**runtime["spec"], "supportedModelFormat": []}}
    with pytest.raises(AssertionError, match="supportedModelFormat"):
        validate(unknown)


def _drain_budget(args: list[str]) -> float:
    return float(flag(args, "--drain-delay-secs")) + float(flag(args, "--exit-timeout-secs"))


@pytest.mark.parametrize("overlay", ["overlays/cpu", "overlays/gpu"])
def test_deployment_probes_ports_and_grace(overlay):
    pod = find(overlay, "Deployment")["spec"]["template"]
    server = container(pod["spec"])
    args = serve_args(server)
    ports = {p["name"]: p["containerPort"] for p in server["ports"]}
    assert ports == {"http": 8000, "grpc": 8001, "metrics": 8002}
    assert [flag(args, f"--{n}-port") for n in ("http", "grpc", "metrics")] == [
        "8000",
        "8001",
        "8002",
    ]
    assert server["livenessProbe"]["httpGet"] == {"path": "/v2/health/live", "port": "http"}
    assert server["readinessProbe"]["httpGet"] == {"path": "/v2/health/ready", "port": "http"}
    assert server["startupProbe"]["httpGet"]["path"] == "/v2/health/ready"
    assert pod["spec"]["terminationGracePeriodSeconds"] > _drain_budget(args)
    assert pod["metadata"]["annotations"]["prometheus.io/port"] == flag(args, "--metrics-port")


@pytest.mark.parametrize("overlay", ["overlays/cpu", "overlays/gpu"])
def test_deployment_runs_unprivileged_on_a_read_only_root(overlay):
    spec = find(overlay, "Deployment")["spec"]["template"]["spec"]
    server = container(spec)
    assert spec["securityContext"]["runAsNonRoot"] is True and spec["securityContext"]["runAsUser"] != 0
    assert server["securityContext"]["readOnlyRootFilesystem"] is True
    assert server["securityContext"]["allowPrivilegeEscalation"] is False
    assert server["securityContext"]["capabilities"]["drop"] == ["ALL"]
    tmp = next(m for m in server["volumeMounts"] if m["mountPath"] == "/tmp")
    assert "emptyDir" in next(v for v in spec["volumes"] if v["name"] == tmp["name"])
    assert {"cpu", "memory"} <= set(server["resources"]["requests"])


def test_gpu_overlay_asks_for_a_gpu_and_the_gpu_image():
    cpu = container(find("overlays/cpu", "Deployment")["spec"]["template"]["spec"])
    gpu = container(find("overlays/gpu", "Deployment")["spec"]["template"]["spec"])
    assert gpu["resources"]["limits"]["nvidia.com/gpu"] == "1"
    assert "nvidia.com/gpu" not in cpu["resources"].get("limits", {})
    assert (cpu["image"], gpu["image"]) == ("modelplatform:cpu", "modelplatform:gpu")
    assert gpu["args"] == cpu["args"]  # the same server; only the image and resources differ


def test_service_pdb_and_service_monitor_select_the_pods():
    labels = find("overlays/cpu", "Deployment")["spec"]["template"]["metadata"]["labels"]
    service = find("overlays/cpu", "Service")
    assert service["spec"]["selector"].items() <= labels.items()
    assert {p["name"]: p["port"] for p in service["spec"]["ports"]} == {
        "http": 8000,
        "grpc": 8001,
        "metrics": 8002,
    }
    assert (
        find("overlays/cpu", "PodDisruptionBudget")["spec"]["selector"]["matchLabels"].items()
        <= labels.items()
    )
    monitor = find("overlays/cpu", "ServiceMonitor")["spec"]
    assert monitor["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    assert [(e["port"], e["path"]) for e in monitor["endpoints"]] == [("metrics", "/metrics")]


def _documented_autoscaling_query() -> str:
    text = (ROOT / "docs" / "observability.md").read_text()
    block = text.split("Triton's autoscaling query", 1)[1]
    return re.search(r"```promql\n(.*?)\n```", block, re.DOTALL).group(1)


def _normalised(query: str) -> str:
    return re.sub(r"\s+", "", query)


def test_autoscaler_reads_the_adapter_rule_built_from_the_documented_query():
    hpa = find("overlays/cpu", "HorizontalPodAutoscaler")["spec"]
    assert hpa["scaleTargetRef"]["name"] == find("overlays/cpu", "Deployment")["metadata"]["name"]
    (metric,) = hpa["metrics"]
    config = yaml.safe_load(find("prometheus-adapter", "ConfigMap")["data"]["config.yaml"])
    (rule,) = config["rules"]
    assert rule["name"]["as"] == metric["pods"]["metric"]["name"] == "avg_time_queue_us"
    per_pod = rule["metricsQuery"].replace("{<<.LabelMatchers>>}", "").replace(" by (<<.GroupBy>>)", "")
    assert _normalised(per_pod) == _normalised(_documented_autoscaling_query())
    assert rule["seriesQuery"].startswith("nv_inference_queue_duration_us{")


RUNTIMES = ("modelplatform", "modelplatform-gpu")


@pytest.mark.parametrize("name", RUNTIMES)
def test_cluster_serving_runtime_protocols_formats_and_metrics(name):
    spec = find("kserve", "ClusterServingRuntime", name)["spec"]
    assert spec["protocolVersions"] == ["v1", "v2", "grpc-v1", "grpc-v2"]
    formats = {f["name"] for f in spec["supportedModelFormats"]}
    assert {"onnx", "tensorrt", "triton", "modelplatform"} <= formats
    args = serve_args(container(spec))
    assert flag(args, "--model-repository") == "/mnt/models"
    assert spec["annotations"]["prometheus.kserve.io/port"] == flag(args, "--metrics-port") == "8002"
    assert spec["annotations"]["prometheus.kserve.io/path"] == "/metrics"
    assert flag(args, "--http-port") == "8080"  # KServe's HTTP port; gRPC on 9000 (h2c)
    assert flag(args, "--grpc-port") == "9000"


def test_only_the_gpu_runtime_selects_tensorrt_by_itself():
    def auto(name: str) -> set[str]:
        formats = find("kserve", "ClusterServingRuntime", name)["spec"]["supportedModelFormats"]
        return {f["name"] for f in formats if f.get("autoSelect")}

    assert "tensorrt" not in auto("modelplatform") and "tensorrt" in auto("modelplatform-gpu")


@pytest.mark.parametrize("name", ["simple-onnx", "resnet-trt"])
def test_inference_services_name_an_s3_repository_and_outlast_the_drain(name):
    predictor = find("kserve/examples", "InferenceService", name)["spec"]["predictor"]
    model = predictor["model"]
    assert model["storageUri"].startswith("s3://")
    runtime = find("kserve", "ClusterServingRuntime", model["runtime"])["spec"]
    assert predictor["terminationGracePeriodSeconds"] > _drain_budget(serve_args(container(runtime)))
    assert model["modelFormat"]["name"] in {f["name"] for f in runtime["supportedModelFormats"]}
    if model["protocolVersion"].startswith("grpc"):
        assert [(p["name"], p["containerPort"]) for p in model["ports"]] == [("h2c", 9000)]


def test_modelmesh_runtime_is_driven_by_the_triton_adapter_on_the_grpc_port():
    spec = find("modelmesh", "ServingRuntime")["spec"]
    args = serve_args(container(spec))
    assert spec["builtInAdapter"]["serverType"] == "triton"
    assert spec["grpcDataEndpoint"] == f"port:{flag(args, '--grpc-port')}"
    assert spec["builtInAdapter"]["runtimeManagementPort"] == int(flag(args, "--grpc-port"))
    assert flag(args, "--model-repository") == "/models/_triton_models"
    assert flag(args, "--model-control-mode") == "explicit" and "--no-strict-readiness" in args
    isvc = find("modelmesh", "InferenceService")
    assert isvc["metadata"]["annotations"]["serving.kserve.io/deploymentMode"] == "ModelMesh"
    assert (
        isvc["spec"]["predictor"]["model"]["runtime"]
        == find("modelmesh", "ServingRuntime")["metadata"]["name"]
    )
