"""The runner for ``python.instance_kind: process``: a ``Model`` in its own child process.

Pure-Python model code holds the GIL, so thread instances do not run it in
parallel; a child process per instance does. The child (child_main.py)
imports ``model.py`` and refuses, at load, what cannot cross a pipe: a
generator ``infer``, an ``http()`` method, a ``TritonPythonModel``. The
server never imports the user's file.
"""

from __future__ import annotations

from pathlib import Path

from modelplatform import ModelConfig

from .child_process import ChildProcess
from .infer_runner import InferRunner


class ProcessRunner(InferRunner):
    """One ``Model`` instance living in a child process; calls travel over its pipe."""

    def __init__(self, config: ModelConfig, version_dir: Path, instance: int) -> None:
        super().__init__(config)
        self._child = ChildProcess(config, version_dir, instance)

    async def load(self) -> None:
        await self._child.start()
        self._infer = self._child.infer

    async def unload(self) -> None:
        await self._child.stop()
