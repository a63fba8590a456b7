"""CUDA shared memory through pycuda, when pycuda imports and a device answers.

A client registers a CUDA IPC handle (``cudaIpcGetMemHandle``, 64 bytes) for
memory on ``device_id``; the server opens it in that device's primary context
(the one torch and cupy use too, so a pointer into the region is valid for
them). :func:`probe` answers None on a machine without pycuda or a GPU, and
the plugin then neither advertises ``cuda_shared_memory`` nor opens handles
(operations.py answers Triton's "GPUs not supported").

A window of a region becomes a :class:`~modelplatform.DeviceArray`: a backend
that accepts device memory reads it in place (no host copy); for any other
the dataplane copies it to the host through :meth:`CudaRegion.to_host`.
Outputs bound to a window are written there by the backend or, after
inference, from the host or device array the backend returned.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import structlog

from modelplatform import DeviceArray, InvalidArgument

log = structlog.get_logger("modelplatform_shared_memory")

#: sizeof(cudaIpcMemHandle_t).
IPC_HANDLE_BYTES = 64


@dataclass(frozen=True, slots=True, eq=False)
class CudaRegion:
    name: str
    device_id: int
    byte_size: int
    #: pycuda's IPCMemoryHandle: the device allocation, closed when the last holder lets go
    #: (the registry, and every DeviceArray a request took of it, through ``owner``).
    memory: Any
    driver: Any = field(repr=False)
    context: Any = field(repr=False)

    @property
    def pointer(self) -> int:
        return int(self.memory)

    def check_window(self, offset: int, size: int, what: str) -> None:
        if offset + size > self.byte_size:
            raise InvalidArgument(
                f"{what}: shared memory region '{self.name}': window of {size} bytes at offset "
                f"{offset} is out of bounds (the region holds {self.byte_size} bytes)"
            )

    def array(self, offset: int, shape: tuple[int, ...], dtype: np.dtype[Any]) -> DeviceArray:
        """The window at ``offset`` as a device array (bounds checked by the caller)."""
        return DeviceArray(
            self.pointer + offset,
            shape,
            dtype,
            self.device_id,
            copy_to_host=self.to_host,
            copy_from_host=self.from_host,
            copy_from_device=self.from_device,
            owner=self,
        )

    def to_host(self, array: DeviceArray) -> np.ndarray:
        host = np.empty(array.shape, dtype=array.dtype)
        with self._current():
            self.driver.memcpy_dtoh(host, array.pointer)
        return host

    def from_host(self, array: DeviceArray, values: np.ndarray) -> None:
        values = np.ascontiguousarray(values)
        _check_fits(array, values.nbytes)
        with self._current():
            self.driver.memcpy_htod(array.pointer, values)

    def from_device(self, array: DeviceArray, values: Any) -> None:
        """From anything in device memory with the CUDA array interface (a DeviceArray, torch, cupy)."""
        interface = values.__cuda_array_interface__
        if interface.get("strides") not in (None, ()):
            raise InvalidArgument(f"output in region '{self.name}' must be contiguous in device memory")
        count = int(np.prod(interface["shape"], dtype=np.int64))
        size = count * np.dtype(interface["typestr"]).itemsize
        _check_fits(array, size)
        with self._current():
            self.driver.memcpy_dtod(array.pointer, interface["data"][0], size)

    def _current(self) -> _Pushed:
        return _Pushed(self.context)


class _Pushed:
    """The region's device context made current on this thread for one copy."""

    __slots__ = ("context",)

    def __init__(self, context: Any) -> None:
        self.context = context

    def __enter__(self) -> None:
        self.context.push()

    def __exit__(self, *exc: object) -> None:
        self.context.pop()


def _check_fits(array: DeviceArray, size: int) -> None:
    if size > array.nbytes:
        raise InvalidArgument(
            f"shared memory window of {array.nbytes} bytes should be at least {size} bytes "
            "to hold the results"
        )


class CudaSupport:
    def __init__(self, driver: Any) -> None:
        self.driver = driver

    def open_region(self, name: str, raw_handle: bytes, device_id: Any, byte_size: Any) -> CudaRegion:
        if not isinstance(raw_handle, bytes) or len(raw_handle) != IPC_HANDLE_BYTES:
            raise InvalidArgument(
                f"shared memory region '{name}': raw_handle must be {IPC_HANDLE_BYTES} bytes"
            )
        if not _is_int(device_id) or not 0 <= device_id < self.driver.Device.count():
            raise InvalidArgument(f"shared memory region '{name}': no CUDA device {device_id!r}")
        if not _is_int(byte_size) or byte_size <= 0:
            raise InvalidArgument(f"shared memory region '{name}': byte_size must be a positive integer")
        context = self.driver.Device(device_id).retain_primary_context()
        context.push()
        try:
            memory = self.driver.IPCMemoryHandle(bytearray(raw_handle))
        except self.driver.Error as error:
            raise InvalidArgument(f"failed to register CUDA shared memory region '{name}': {error}") from None
        finally:
            context.pop()
        return CudaRegion(name, device_id, byte_size, memory, self.driver, context)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def probe() -> CudaSupport | None:
    """pycuda with at least one device, or None (the reason is logged at debug level)."""
    try:
        import pycuda.driver as driver  # optional: requirements/gpu.txt
    except ImportError:
        log.debug("cuda_shm_unavailable", reason="pycuda is not installed")
        return None
    try:
        driver.init()
        if driver.Device.count() == 0:
            log.debug("cuda_shm_unavailable", reason="no CUDA device")
            return None
    except Exception as error:  # noqa: BLE001 - any driver failure means no CUDA here
        log.debug("cuda_shm_unavailable", reason=str(error))
        return None
    return CudaSupport(driver)
