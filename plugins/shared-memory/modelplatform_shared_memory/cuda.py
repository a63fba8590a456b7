"""CUDA shared memory through pycuda, when pycuda imports and a device answers.

A client registers a CUDA IPC handle (``cudaIpcGetMemHandle``, 64 bytes) for
memory on ``device_id``; the server opens it in that device's primary
context. :func:`probe` answers None on a machine without pycuda or a GPU,
and the plugin then neither advertises ``cuda_shared_memory`` nor opens
handles (operations.py answers Triton's "GPUs not supported").

Only registration lives here: the oip transports feed host-memory backends,
so a tensor in a CUDA region would need a device-to-host copy; the codec
refuses such regions in requests until a device-memory backend path exists.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import structlog

from modelplatform import InvalidArgument

log = structlog.get_logger("modelplatform_shared_memory")

#: sizeof(cudaIpcMemHandle_t).
IPC_HANDLE_BYTES = 64


@dataclass(frozen=True, slots=True)
class CudaRegion:
    name: str
    device_id: int
    byte_size: int
    #: pycuda's IPCMemoryHandle: the device allocation, closed when collected.
    memory: Any


class CudaSupport:
    def __init__(self, driver: Any) -> None:
        self.driver = driver

    def open_region(self, name: str, raw_handle: bytes, device_id: Any, byte_size: Any) -> CudaRegion:
        if not isinstance(raw_handle, bytes) or len(raw_handle) != IPC_HANDLE_BYTES:
            raise InvalidArgument(
                f"shared memory region '{name}': raw_handle must be {IPC_HANDLE_BYTES} bytes"
            )
        if not isinstance(device_id, int) or not 0 <= device_id < self.driver.Device.count():
            raise InvalidArgument(f"shared memory region '{name}': no CUDA device {device_id!r}")
        if not isinstance(byte_size, int) or byte_size <= 0:
            raise InvalidArgument(f"shared memory region '{name}': byte_size must be a positive integer")
        context = self.driver.Device(device_id).retain_primary_context()
        context.push()
        try:
            memory = self.driver.IPCMemoryHandle(bytearray(raw_handle))
        except self.driver.Error as error:
            raise InvalidArgument(f"failed to register CUDA shared memory region '{name}': {error}") from None
        finally:
            context.pop()
        return CudaRegion(name, device_id, byte_size, memory)


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
