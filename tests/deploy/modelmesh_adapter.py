"""What ModelMesh's built-in Triton adapter does to a runtime, for the ModelMesh test.

Behaviour read from kserve/modelmesh-runtime-adapter (model-mesh-triton-adapter:
server/server.go, server/adaptmodellayout.go, server/const.go); written here from that
reading, not copied. The adapter

- lays each model ModelMesh places out as a Triton model folder named by the model id
  under ``<models>/_triton_models``: a single model file becomes ``<id>/1/model.<ext>``, a
  symlink to the file the puller downloaded to ``<models>/<id>/``, with no config.pbtxt
  (the runtime completes the configuration from the model); a folder that already holds
  a config.pbtxt keeps its layout, its config rewritten without ``name`` (the id is the
  name) by Go's prototext, and every other entry symlinked to the download;
- loads it with RepositoryModelLoad(model_name=id), unloads with RepositoryModelUnload
  (NOT_FOUND counts as done) and then deletes the folder;
- checks the runtime with ServerReady, then unloads whatever RepositoryIndex(ready=true)
  lists, clears the folder, and reads the version from ServerMetadata (RuntimeStatus);
- forwards ModelInfer and ModelMetadata with the model id written into field 1 (the
  model name) of the request.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import grpc

from modelplatform_oip.protos import grpc_service_pb2 as pb
from modelplatform_oip.protos import grpc_service_pb2_grpc as pb_grpc

TRITON_MODELS = "_triton_models"
#: The file name the adapter gives a single model file of each type.
FILE_NAMES = {"onnx": "model.onnx", "tensorrt": "model.plan", "pytorch": "model.pt"}


def lay_out_file(models: Path, model_id: str, model_type: str, downloaded: Path) -> Path:
    folder = models / TRITON_MODELS / model_id
    (folder / "1").mkdir(parents=True)
    (folder / "1" / FILE_NAMES[model_type]).symlink_to(downloaded)
    return folder


def lay_out_native(models: Path, model_id: str, downloaded: Path, config_without_name: str) -> Path:
    folder = models / TRITON_MODELS / model_id
    folder.mkdir(parents=True)
    for entry in downloaded.iterdir():
        if entry.name == "config.pbtxt":
            (folder / entry.name).write_text(config_without_name)
        else:
            (folder / entry.name).symlink_to(entry)
    return folder


class Adapter:
    """The adapter's calls to the runtime, over the runtime's gRPC port."""

    def __init__(self, grpc_port: int, models: Path) -> None:
        self.channel = grpc.insecure_channel(f"127.0.0.1:{grpc_port}")
        self.runtime = pb_grpc.GRPCInferenceServiceStub(self.channel)
        self.models = models

    def close(self) -> None:
        self.channel.close()

    def runtime_status(self) -> str:
        """READY (and the runtime's version) once the runtime is ready and emptied."""
        if not self.runtime.ServerReady(pb.ServerReadyRequest(), timeout=10).ready:
            return "STARTING"
        for model in self.ready_models():
            self.runtime.RepositoryModelUnload(
                pb.RepositoryModelUnloadRequest(model_name=model.name), timeout=30
            )
        for entry in (self.models / TRITON_MODELS).iterdir():
            shutil.rmtree(entry)
        version = self.runtime.ServerMetadata(pb.ServerMetadataRequest(), timeout=10).version
        return f"READY {version}"

    def ready_models(self) -> list[pb.RepositoryIndexResponse.ModelIndex]:
        index = self.runtime.RepositoryIndex(
            pb.RepositoryIndexRequest(repository_name="", ready=True), timeout=10
        )
        return list(index.models)

    def load(self, model_id: str) -> None:
        self.runtime.RepositoryModelLoad(pb.RepositoryModelLoadRequest(model_name=model_id), timeout=90)

    def unload(self, model_id: str) -> None:
        try:
            self.runtime.RepositoryModelUnload(
                pb.RepositoryModelUnloadRequest(model_name=model_id), timeout=30
            )
        except grpc.RpcError as error:
            if error.code() != grpc.StatusCode.NOT_FOUND:
                raise
        shutil.rmtree(self.models / TRITON_MODELS / model_id, ignore_errors=True)
