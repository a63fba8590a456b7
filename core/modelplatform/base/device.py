"""Tensors that stay in GPU memory: a client's CUDA shared-memory window, seen by backends.

A transport that finds an input in device memory (Triton's CUDA shared memory)
sets :attr:`Tensor.device <modelplatform.base.inference.Tensor.device>` to a
:class:`DeviceArray` and leaves ``Tensor.data`` as a read-only stand-in of the
right shape and type that holds no values (:meth:`DeviceArray.stand_in`). A backend that
declares ``accepts_device_memory`` reads the device array itself (torch and
cupy take it without a copy through ``__cuda_array_interface__``); for every
other backend the dataplane copies such inputs to host memory first
(:func:`to_host_inputs`), so no backend ever reads a stand-in by mistake.

The core knows no CUDA library: the plugin that made the array supplies its
copies (``copy_to_host``, ``copy_from_host``, ``copy_from_device``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from modelplatform.base.inference import InferenceRequest


@dataclass(frozen=True, slots=True, eq=False)
class DeviceArray:
    """``shape`` elements of ``dtype`` at ``pointer`` on CUDA device ``device_id``, C order.

    The memory is not the server's (a client's registered region): ``owner``
    keeps the mapping open while a request holds the array.
    """

    pointer: int
    shape: tuple[int, ...]
    dtype: np.dtype[Any]
    device_id: int
    copy_to_host: Callable[[DeviceArray], np.ndarray]
    copy_from_host: Callable[[DeviceArray, np.ndarray], None]
    copy_from_device: Callable[[DeviceArray, Any], None]
    owner: Any = None

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        """Numba's CUDA array interface (version 3): torch.as_tensor and cupy.asarray map it."""
        return {
            "shape": self.shape,
            "typestr": self.dtype.str,
            "data": (self.pointer, False),
            "strides": None,
            "version": 3,
        }

    def to_host(self) -> np.ndarray:
        """A host copy of the values."""
        return self.copy_to_host(self)

    def stand_in(self) -> np.ndarray:
        """``Tensor.data`` for a tensor in this array: right shape and type, no memory, read-only."""
        return np.broadcast_to(np.zeros((), dtype=self.dtype), self.shape)

    def write(self, values: Any) -> None:
        """Fill the array from a host array (bytes-for-bytes) or from another device array."""
        if isinstance(values, np.ndarray):
            self.copy_from_host(self, values)
        else:
            self.copy_from_device(self, values)


def to_host_inputs(request: InferenceRequest) -> None:
    """Copy every input in device memory to the host, for a backend that reads only ``data``.

    Requested outputs bound to device memory are unbound too: their owner
    writes them from the response after inference.
    """
    for tensor in request.inputs:
        if tensor.device is not None:
            tensor.data = tensor.device.to_host()
            tensor.device = None
    for output in request.outputs or ():
        output.device_destination = None
