"""``file:<version>/<name>`` load parameters -> a temporary override model folder.

Every name is checked before anything is written: a numeric version first,
then relative path parts only (no ``..``, no absolute paths, no control
characters), so an upload can never write outside its own folder. Writing happens in a worker thread.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path, PurePosixPath

from modelplatform import InvalidArgument, LimitExceeded

FILE_PREFIX = "file:"
MAX_FILES = 4096


def relative_path(key: str) -> PurePosixPath:
    """``file:1/model.py`` -> ``1/model.py``; refuses anything that could escape."""
    path = PurePosixPath(key[len(FILE_PREFIX) :])
    parts = path.parts
    if len(parts) < 2 or not parts[0].isdigit() or path.is_absolute():
        raise InvalidArgument(f"load parameter '{key}': expected 'file:<version>/<file name>'")
    if any(part in ("", ".", "..") or "\\" in part for part in parts):
        raise InvalidArgument(f"load parameter '{key}': the path must stay inside the model folder")
    if any(ord(character) < 0x20 or character == "\x7f" for character in str(path)):
        # A NUL would fail deep in open() (found by the fuzzer); no file name needs controls.
        raise InvalidArgument(f"load parameter {key!r}: the file name holds a control character")
    return path


def check_files(files: Mapping[str, bytes]) -> dict[PurePosixPath, bytes]:
    if len(files) > MAX_FILES:
        raise LimitExceeded("number of uploaded files", len(files), MAX_FILES)
    return {relative_path(key): data for key, data in files.items()}


def _write(files: dict[PurePosixPath, bytes]) -> Path:
    root = Path(tempfile.mkdtemp(prefix="modelplatform-upload-"))
    try:
        for relative, data in files.items():
            target = root.joinpath(*relative.parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
    except OSError as error:
        shutil.rmtree(root, ignore_errors=True)
        raise InvalidArgument(f"cannot write uploaded files: {error}") from None
    return root


async def write_model_folder(files: Mapping[str, bytes]) -> Path:
    """A fresh temporary folder holding the files; the model manager deletes it later."""
    checked = check_files(files)
    return await asyncio.to_thread(_write, checked)
