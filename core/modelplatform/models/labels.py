"""The outputs' label files (``label_filename``), read once when a version loads.

Triton's labels file: one label per line, line i naming class index i, in the
model's folder (beside config.pbtxt). A missing or unreadable file fails the
load, naming the output and the file; a path that would leave the model's
folder is refused. The classification extension (dataplane/classification.py)
reads the labels; a class without a line (or with an empty one) has none.
"""

from __future__ import annotations

from pathlib import Path

from modelplatform.base.errors import InvalidArgument
from modelplatform.base.model_config import ModelConfig

Labels = dict[str, tuple[str, ...]]


def read_labels(config: ModelConfig, model_dir: Path) -> Labels:
    """Each output with a ``label_filename``: its labels, by output name."""
    return {
        spec.name: _read(spec.name, spec.label_filename, model_dir)
        for spec in config.outputs
        if spec.label_filename
    }


def _read(output: str, filename: str, model_dir: Path) -> tuple[str, ...]:
    where = f"output '{output}': label_filename '{filename}'"
    folder = model_dir.resolve()
    path = (folder / filename).resolve()
    if not path.is_relative_to(folder):
        raise InvalidArgument(f"{where} must name a file inside the model's folder")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise InvalidArgument(f"{where} could not be read: {error}") from None
    return tuple(line.rstrip("\r") for line in text.split("\n"))
