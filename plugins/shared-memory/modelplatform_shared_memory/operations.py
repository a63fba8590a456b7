"""Status, register and unregister for system and CUDA regions: what HTTP and gRPC both call.

Answers follow Triton: while client shared memory is disabled, status lists
nothing and register/unregister answer UNSUPPORTED with Triton's words;
unregistering an unknown name succeeds; a second register under a name
answers ALREADY_EXISTS. Without a usable GPU (no pycuda, no device) the CUDA
calls answer Triton's "GPUs not supported" INVALID_ARGUMENT.

With ``--workers N`` a register or unregister applies here first (so the
client hears this worker's refusal), then on every sibling before the answer
(ServerContext.broadcast): a request naming the region may reach any worker.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from modelplatform import Broadcast, InvalidArgument, Unsupported

from . import cuda
from .registry import CUDA, SYSTEM, RegionRegistry
from .system import open_region

#: The ServerContext.broadcast topic of registrations.
TOPIC = "shared-memory"

DISABLED = "Client shared memory is disabled. Start the server with '--allow-client-shm' to enable."


@dataclass(frozen=True, slots=True)
class SystemStatus:
    name: str
    key: str
    offset: int
    byte_size: int


@dataclass(frozen=True, slots=True)
class CudaStatus:
    name: str
    device_id: int
    byte_size: int


class SharedMemoryOperations:
    def __init__(self, registry: RegionRegistry, enabled: bool, gpu: cuda.CudaSupport | None) -> None:
        self.registry = registry
        self.enabled = enabled
        self.gpu = gpu
        self.broadcast = Broadcast()  # no siblings until startup hands the server's over

    def share_with_siblings(self, broadcast: Broadcast) -> None:
        """Registrations made through any worker apply on every worker (called at start-up)."""
        self.broadcast = broadcast
        broadcast.subscribe(TOPIC, self._apply_published)

    def _apply_published(self, change: dict[str, Any]) -> None:
        operation, arguments = change["operation"], change["arguments"]
        apply: dict[str, Callable[..., None]] = {
            "register_system": self._register_system,
            "unregister_system": self._unregister_system,
            "register_cuda": self._register_cuda,
            "unregister_cuda": self._unregister_cuda,
        }
        apply[operation](*arguments)

    async def _everywhere(self, operation: str, *arguments: Any) -> None:
        await self.broadcast.publish(TOPIC, {"operation": operation, "arguments": list(arguments)})

    # ---- system ----

    def system_status(self, name: str = "") -> list[SystemStatus]:
        regions = self.registry.of_kind(SYSTEM, name)
        return [SystemStatus(r.name, r.key, r.offset, r.byte_size) for r in regions]  # type: ignore[attr-defined]  # of_kind(SYSTEM) holds SystemRegions

    async def register_system(self, name: str, key: Any, offset: Any, byte_size: Any) -> None:
        self._register_system(name, key, offset, byte_size)
        await self._everywhere("register_system", name, key, offset, byte_size)

    async def unregister_system(self, name: str = "") -> None:
        self._unregister_system(name)
        await self._everywhere("unregister_system", name)

    def _register_system(self, name: str, key: Any, offset: Any, byte_size: Any) -> None:
        self._check_enabled()
        _check_name(name)
        self.registry.check_free(name)
        self.registry.add(SYSTEM, open_region(name, key, offset, byte_size))

    def _unregister_system(self, name: str = "") -> None:
        self._check_enabled()
        self.registry.remove(SYSTEM, name)

    # ---- CUDA ----

    def cuda_status(self, name: str = "") -> list[CudaStatus]:
        regions = self.registry.of_kind(CUDA, name)
        return [CudaStatus(r.name, r.device_id, r.byte_size) for r in regions]  # type: ignore[attr-defined]  # of_kind(CUDA) holds CudaRegions

    async def register_cuda(self, name: str, raw_handle: bytes, device_id: Any, byte_size: Any) -> None:
        self._register_cuda(name, raw_handle, device_id, byte_size)
        await self._everywhere("register_cuda", name, raw_handle, device_id, byte_size)

    async def unregister_cuda(self, name: str = "") -> None:
        self._unregister_cuda(name)
        if self.gpu is not None:
            await self._everywhere("unregister_cuda", name)

    def _register_cuda(self, name: str, raw_handle: bytes, device_id: Any, byte_size: Any) -> None:
        gpu = self._gpu(f"failed to register CUDA shared memory region: '{name}'")
        self._check_enabled()
        _check_name(name)
        self.registry.check_free(name)
        self.registry.add(CUDA, gpu.open_region(name, raw_handle, device_id, byte_size))

    def _unregister_cuda(self, name: str = "") -> None:
        if self.gpu is None:
            return  # nothing can be registered: Triton answers success
        self._check_enabled()
        self.registry.remove(CUDA, name)

    def _gpu(self, what: str) -> cuda.CudaSupport:
        if self.gpu is None:
            raise InvalidArgument(f"{what}, GPUs not supported")
        return self.gpu

    def _check_enabled(self) -> None:
        if not self.enabled:
            raise Unsupported(DISABLED)


def _check_name(name: str) -> None:
    if not name or len(name) > 256 or "/" in name:
        raise InvalidArgument(f"shared memory region name {name!r} must be 1 to 256 characters without '/'")
