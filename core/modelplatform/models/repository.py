"""Scan a model repository: ``<repo>/<model>/config.pbtxt`` + ``<version>/`` folders.

Numeric sub-folders are versions, under any name TF Serving accepts: ``1``,
zero-padded ``00000042`` (version 42), an export timestamp ``1700000000``.
Each version keeps the name of its folder, so it is loaded from the folder
it was read from. Anything else inside a model folder that is
not a known entry (config.pbtxt, the warmup/ folder, a labels file an output's
``label_filename`` names) is reported (logged) rather than silently ignored, so a
mistyped version folder is visible.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import structlog

from modelplatform.base.model_config import CONFIG_FILE, WARMUP_FOLDER

log = structlog.get_logger("modelplatform.models.repository")


@dataclass(frozen=True, slots=True)
class ModelEntry:
    """What the repository holds for one model (nothing loaded yet)."""

    name: str
    path: Path
    versions: tuple[int, ...]
    #: Each version's folder name (``00000042`` for version 42).
    folders: dict[int, str] = field(default_factory=dict)

    def version_dir(self, version: int) -> Path:
        return self.path / self.folders.get(version, str(version))


def scan(root: Path) -> dict[str, ModelEntry]:
    """Every model folder under ``root``, by name. Hidden folders are skipped."""
    if not root.is_dir():
        log.warning("repository_missing", path=str(root))
        return {}
    entries = {}
    for child in sorted(root.iterdir()):
        if child.is_dir() and not child.name.startswith("."):
            entries[child.name] = read_model(child)
    return entries


def is_model_folder(root: Path) -> bool:
    """Whether ``root`` is one model's folder rather than a repository (TF Serving's model
    base path): it holds version folders and no other folder."""
    if not root.is_dir():
        return False
    folders = [c for c in root.iterdir() if c.is_dir() and not c.name.startswith(".")]
    return bool(folders) and all(version_number(c.name) is not None for c in folders)


def model_names(root: Path) -> list[str]:
    """The model folders under ``root``, without reading them (the index calls this often)."""
    if not root.is_dir():
        return []
    return sorted(c.name for c in root.iterdir() if c.is_dir() and not c.name.startswith("."))


#: An output's labels file in config.pbtxt text; the loader reads the config properly later.
_LABEL_FILENAME = re.compile(r'label_filename\s*:\s*"([^"]*)"')


#: Triton and TF Serving keep versions as int64.
MAX_VERSION = 2**63 - 1


def version_number(folder: str) -> int | None:
    """The version a folder name stands for (ASCII digits within int64), or None."""
    if not (folder.isascii() and folder.isdigit()):
        return None  # isdigit alone takes "²" and other digits int() refuses
    number = int(folder)
    return number if number <= MAX_VERSION else None


def read_model(model_dir: Path) -> ModelEntry:
    folders: dict[int, str] = {}
    known = {CONFIG_FILE, WARMUP_FOLDER, *_label_files(model_dir)}
    for child in sorted(model_dir.iterdir()):
        number = version_number(child.name) if child.is_dir() else None
        if number is not None:
            _add_version(model_dir, folders, number, child.name)
        elif child.name not in known and not child.name.startswith("."):
            log.warning(
                "repository_entry_ignored",
                model=model_dir.name,
                entry=child.name,
                reason="not a numeric version folder, config.pbtxt, warmup/ or a label_filename",
            )
    return ModelEntry(model_dir.name, model_dir, tuple(sorted(folders)), folders)


def _add_version(model_dir: Path, folders: dict[int, str], number: int, folder: str) -> None:
    """The first folder by name of a number wins (``007`` before ``07`` before ``7``); the others are logged."""
    if number in folders:
        log.warning(
            "repository_entry_ignored",
            model=model_dir.name,
            entry=folder,
            reason=f"version {number} is already read from folder '{folders[number]}'",
        )
        return
    folders[number] = folder


def _label_files(model_dir: Path) -> list[str]:
    """The top-level files the outputs' ``label_filename`` name (read without protobuf: a scan is cheap)."""
    try:
        text = (model_dir / CONFIG_FILE).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    return [name.split("/")[0] for name in _LABEL_FILENAME.findall(text)]


#: Every file of a model folder as (relative path, size, mtime_ns), sorted.
Fingerprint = tuple[tuple[str, int, int], ...]
_SKIPPED = "__pycache__"


def fingerprint(model_dir: Path) -> Fingerprint:
    """What a model folder holds right now; changes whenever a file is added, edited or grows.

    Hidden entries and ``__pycache__`` are left out: a backend importing a
    model writes bytecode there, which is not a change to the model.
    """
    items = []
    for path in sorted(model_dir.rglob("*")):
        relative = path.relative_to(model_dir)
        if any(part.startswith(".") or part == _SKIPPED for part in relative.parts):
            continue
        try:
            stat = path.stat()
        except OSError:
            continue  # removed while we looked: the next scan sees the change
        if path.is_dir():
            items.append((relative.as_posix(), -1, 0))  # an added or removed (version) folder
        else:
            items.append((relative.as_posix(), stat.st_size, stat.st_mtime_ns))
    return tuple(items)


def snapshot(root: Path) -> dict[str, Fingerprint]:
    """Fingerprints of every model folder under ``root`` (quietly: poll mode calls it often)."""
    if not root.is_dir():
        return {}
    return {
        child.name: fingerprint(child)
        for child in sorted(root.iterdir())
        if child.is_dir() and not child.name.startswith(".")
    }
