"""The runner for ``python.instance_kind: process``: a ``Model`` in its own child process.

Pure-Python model code holds the GIL, so thread instances do not run it in
parallel; a child process per instance does. The child (child_main.py)
imports ``model.py`` and refuses, at load, what cannot cross a pipe: a
generator ``infer``, an ``http()`` method, a ``TritonPythonModel``. The
server never imports the user's file. The model's bounds (limits.py: an
execute timeout and a memory bound) are resolved at load; the child's
supervision, restarts included, is in child_process.py.
"""

from __future__ import annotations

from pathlib import Path

from modelplatform import ModelConfig, Unsupported

from .child_process import ChildProcess
from .child_watch import memory_readable
from .infer_runner import InferRunner
from .limits import MAX_MEMORY, ProcessLimits


class ProcessRunner(InferRunner):
    """One ``Model`` instance living in a child process; calls travel over its pipe."""

    def __init__(self, config: ModelConfig, version_dir: Path, instance: int, limits: ProcessLimits) -> None:
        super().__init__(config)
        if limits.max_memory_bytes is not None and not memory_readable():
            raise Unsupported(f"model '{config.name}': '{MAX_MEMORY}' needs /proc/<pid>/statm (Linux)")
        self._child = ChildProcess(config, version_dir, instance, limits)

    async def load(self) -> None:
        await self._child.start()
        self._infer = self._child.infer

    async def unload(self) -> None:
        await self._child.stop()
