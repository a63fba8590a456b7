"""A python model ``slow`` that sleeps the seconds it is sent, then marks that it finished.

``finished-<seconds>`` appears beside its model.py when a call ran to its end,
so a test can tell a cancelled call (no file) from a finished one.
"""

from __future__ import annotations

from pathlib import Path

#: A python model's config: FP32 SECONDS in, FP32 DONE out, ``instances`` CPU instances.
CONFIG = """
name: "{name}"
backend: "python"
max_batch_size: 0
input [ {{ name: "SECONDS" data_type: TYPE_FP32 dims: [ 1 ] }} ]
output [ {{ name: "DONE" data_type: TYPE_FP32 dims: [ 1 ] }} ]
instance_group [ {{ count: {instances} kind: KIND_CPU }} ]
"""
MODEL = """
import asyncio
from pathlib import Path


class Model:
    async def infer(self, inputs):
        seconds = float(inputs["SECONDS"][0])
        await asyncio.sleep(seconds)
        Path(__file__).with_name(f"finished-{seconds}").touch()
        return {"DONE": inputs["SECONDS"]}
"""


def add_slow_model(repository: Path, instances: int) -> Path:
    """Write ``slow`` with ``instances`` instances into ``repository``; answer its version folder."""
    version = repository / "slow" / "1"
    version.mkdir(parents=True)
    (repository / "slow" / "config.pbtxt").write_text(CONFIG.format(name="slow", instances=instances))
    (version / "model.py").write_text(MODEL)
    return version
