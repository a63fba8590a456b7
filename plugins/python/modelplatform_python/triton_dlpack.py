"""DLPack for ``pb_utils.Tensor``: ``to_dlpack`` / ``from_dlpack`` / ``__dlpack__`` on CPU, zero-copy.

``from_dlpack(name, x)`` takes what Triton's does: a DLPack capsule (torch's
``to_dlpack(t)``), or any object with ``__dlpack__`` and ``__dlpack_device__``
(a torch tensor, a numpy array, a JAX or CuPy array). A CPU tensor becomes a
numpy view of the same memory (``numpy.from_dlpack``). A tensor on another
device is kept as it is, unconverted (:class:`DeviceData`): ``is_cpu()`` says
False and ``to_dlpack()`` hands it on, so a later change can keep device
tensors on their device; what needs numpy (``as_numpy``, a response's
outputs) refuses it with the reason.

Only C-contiguous tensors are taken, as Triton takes only those.
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from .triton_errors import TritonModelException

#: DLPack's device type for main memory (``kDLCPU``).
CPU = 1
_LEGACY, _VERSIONED = b"dltensor", b"dltensor_versioned"
#: Where ``DLDevice.device_type`` sits in the capsule's struct: a ``DLManagedTensor``
#: begins with its ``DLTensor`` (data pointer, then the device); a
#: ``DLManagedTensorVersioned`` puts version, manager context, deleter and flags first.
_DEVICE_OFFSET = {_LEGACY: 8, _VERSIONED: 40}

_capsule_name = ctypes.pythonapi.PyCapsule_GetName
_capsule_name.restype = ctypes.c_char_p
_capsule_name.argtypes = [ctypes.py_object]
_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


class DeviceData:
    """A tensor outside main memory, kept as it came (an object with ``__dlpack__``, or a capsule)."""

    def __init__(self, source: Any, device: tuple[int, int]) -> None:
        self.source = source
        self.device = device

    def capsule(self) -> Any:
        dlpack = getattr(self.source, "__dlpack__", None)
        return self.source if dlpack is None else dlpack()


def array_from_dlpack(name: str, source: Any) -> np.ndarray | DeviceData:
    """``source`` as a numpy view (CPU) or kept as :class:`DeviceData` (another device)."""
    if _is_capsule(source):
        device = _capsule_device(name, source)
        source = _Capsule(source, device)
    elif not (hasattr(source, "__dlpack__") and hasattr(source, "__dlpack_device__")):
        raise TritonModelException(
            f"Tensor.from_dlpack('{name}'): needs a DLPack capsule or an object with "
            f"__dlpack__ and __dlpack_device__, got {type(source).__name__}"
        )
    device_type, device_id = (int(part) for part in source.__dlpack_device__())
    if device_type != CPU:
        return DeviceData(source, (device_type, device_id))
    try:
        array = np.from_dlpack(source)
    except (BufferError, TypeError, RuntimeError) as error:
        raise TritonModelException(f"Tensor.from_dlpack('{name}'): {error}") from None
    if not array.flags.c_contiguous:
        raise TritonModelException(f"Tensor.from_dlpack('{name}'): the tensor is not C-contiguous")
    return array


def capsule_of(array: np.ndarray, **kwargs: Any) -> Any:
    """A DLPack capsule of ``array``'s memory, no copy.

    The plain (pre-1.0) capsule every consumer reads; for a read-only array
    (a request's inputs are views of the received bytes) DLPack 1.0's, which
    can say read-only where the old one cannot.
    """
    try:
        return array.__dlpack__(**kwargs)
    except BufferError:
        if array.flags.writeable or kwargs:
            raise
        return array.__dlpack__(max_version=(1, 0))


def _is_capsule(value: Any) -> bool:
    return type(value).__name__ == "PyCapsule"


def _capsule_device(name: str, capsule: Any) -> tuple[int, int]:
    kind = _capsule_name(capsule)
    offset = _DEVICE_OFFSET.get(kind or b"")
    if offset is None:
        used = " (already consumed)" if kind and kind.startswith(b"used_") else ""
        raise TritonModelException(f"Tensor.from_dlpack('{name}'): not a DLPack capsule{used}")
    address = _capsule_pointer(capsule, kind)
    device = (ctypes.c_int32 * 2).from_address(address + offset)
    return int(device[0]), int(device[1])


class _Capsule:
    """A bare capsule with the two methods ``numpy.from_dlpack`` asks for."""

    def __init__(self, capsule: Any, device: tuple[int, int]) -> None:
        self._capsule = capsule
        self._device = device

    def __dlpack__(self, **_: Any) -> Any:
        return self._capsule

    def __dlpack_device__(self) -> tuple[int, int]:
        return self._device
