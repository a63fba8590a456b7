"""One deserialised engine on one GPU: execution context, stream, reusable buffers.

Only this module touches tensorrt and pycuda, imported when an engine opens.
Every method is synchronous and runs in a worker thread; each one makes the
device's primary CUDA context current for its duration (worker threads
change), and :meth:`TrtEngine.close` frees whatever :meth:`TrtEngine.open`
got to, so a half-failed open leaves nothing behind.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from modelplatform import InvalidArgument, ModelExecutionError, Unsupported
from modelplatform.datatypes import numpy_dtype

from .dtypes import datatype_of
from .engine_info import EngineInfo, EngineTensor, Profile, Shape
from .planning import BufferPlan, plan_buffers


class TrtEngine:
    def __init__(self, model: str, device_index: int = 0) -> None:
        self.model = model
        self.device_index = device_index
        self.info = EngineInfo(())
        self.profile = 0
        self._cuda: Any = None
        self._cuda_context: Any = None
        self._runtime: Any = None
        self._engine: Any = None
        self._context: Any = None
        self._stream: Any = None
        self._host: dict[str, np.ndarray] = {}
        self._device: dict[str, Any] = {}

    @classmethod
    def open(cls, model: str, path: Path, device_index: int = 0) -> TrtEngine:
        engine = cls(model, device_index)
        try:
            engine._open(path)
        except BaseException:
            engine.close()
            raise
        return engine

    # ---- load ----

    def _open(self, path: Path) -> None:
        import pycuda.driver as cuda  # heavy: only when a model loads
        import tensorrt as trt

        cuda.init()
        self._cuda = cuda
        self._cuda_context = cuda.Device(self.device_index).retain_primary_context()
        with self._current():
            self._runtime = trt.Runtime(trt.Logger(trt.Logger.WARNING))
            self._engine = self._runtime.deserialize_cuda_engine(path.read_bytes())
            if self._engine is None:
                raise InvalidArgument(
                    f"model '{self.model}': TensorRT could not deserialise {path} "
                    "(not an engine, or built by another TensorRT version or for another GPU)"
                )
            self.info = _describe(self.model, trt, self._engine)
            self._context = self._engine.create_execution_context()
            self._stream = cuda.Stream()
            self._allocate(plan_buffers(self.model, self.info, self._output_shapes()))

    def _output_shapes(self) -> dict[str, list[Shape]]:
        """Each output's shape when every input is at a profile's maximum."""
        shapes: dict[str, list[Shape]] = {t.name: [] for t in self.info.outputs}
        for profile in range(self.info.num_profiles):
            self._use_profile(profile)
            for tensor in self.info.inputs:
                if tensor.profiles:
                    self._context.set_input_shape(tensor.name, tensor.profiles[profile].max)
            for tensor in self.info.outputs:
                shapes[tensor.name].append(tuple(self._context.get_tensor_shape(tensor.name)))
        self._use_profile(0)
        return shapes

    def _allocate(self, plans: Sequence[BufferPlan]) -> None:
        for plan in plans:
            elements = max(plan.elements, 1)
            self._host[plan.name] = self._cuda.pagelocked_empty(elements, numpy_dtype(plan.datatype))
            self._device[plan.name] = self._cuda.mem_alloc(max(plan.nbytes, 1))
            self._context.set_tensor_address(plan.name, int(self._device[plan.name]))

    # ---- run ----

    def infer(
        self, inputs: Mapping[str, np.ndarray], profile: int, outputs: Sequence[str]
    ) -> dict[str, np.ndarray]:
        with self._current():
            if profile != self.profile:
                self._use_profile(profile)
            for name, array in inputs.items():
                self._context.set_input_shape(name, array.shape)
                staged = self._host[name][: array.size].reshape(array.shape)
                np.copyto(staged, array, casting="no")
                self._cuda.memcpy_htod_async(self._device[name], staged, self._stream)
            if not self._context.execute_async_v3(self._stream.handle):
                raise ModelExecutionError(self.model, RuntimeError("TensorRT execute_async_v3 failed"))
            results = {name: self._fetch(name) for name in outputs}
            self._stream.synchronize()
        return {name: view.copy() for name, view in results.items()}

    def _fetch(self, name: str) -> np.ndarray:
        shape = tuple(self._context.get_tensor_shape(name))
        view = self._host[name][: math.prod(shape)].reshape(shape)
        self._cuda.memcpy_dtoh_async(view, self._device[name], self._stream)
        return view

    def _use_profile(self, profile: int) -> None:
        self._context.set_optimization_profile_async(profile, self._stream.handle)
        self._stream.synchronize()
        self.profile = profile

    # ---- unload ----

    def close(self) -> None:
        """Free buffers, context, stream, engine and runtime; safe to call twice."""
        if self._cuda_context is None:
            return
        with self._current():
            for allocation in self._device.values():
                allocation.free()
            for array in self._host.values():
                page_locked: Any = array.base  # pycuda's page-locked buffer the array views
                page_locked.free()
            self._device, self._host = {}, {}
            self._context = self._engine = self._runtime = self._stream = None
        self._cuda_context.detach()
        self._cuda_context = None

    @contextmanager
    def _current(self) -> Iterator[None]:
        self._cuda_context.push()
        try:
            yield
        finally:
            self._cuda.Context.pop()


def _describe(model: str, trt: Any, engine: Any) -> EngineInfo:
    profiles = engine.num_optimization_profiles
    tensors = [
        _tensor(model, trt, engine, engine.get_tensor_name(i), profiles) for i in range(engine.num_io_tensors)
    ]
    return EngineInfo(tuple(tensors), profiles)


def _tensor(model: str, trt: Any, engine: Any, name: str, profiles: int) -> EngineTensor:
    if engine.is_shape_inference_io(name):
        raise Unsupported(f"model '{model}': shape tensor '{name}' is not supported")
    is_input = engine.get_tensor_mode(name) == trt.TensorIOMode.INPUT
    ranges: tuple[Profile, ...] = ()
    if is_input:
        ranges = tuple(
            Profile(*(tuple(s) for s in engine.get_tensor_profile_shape(name, p))) for p in range(profiles)
        )
    datatype = datatype_of(model, name, engine.get_tensor_dtype(name).name)
    return EngineTensor(name, is_input, datatype, tuple(engine.get_tensor_shape(name)), ranges)
