"""A model's own folder given as the repository: served as a repository of that one model.

TF Serving is pointed at a model base path (``--model_base_path=/models/m``,
holding the version folders); Triton and this server at the folder holding
the models. When ``--model-repository`` names a folder whose folders are all
versions (repository.is_model_folder), the server serves it as a repository
holding that one model, named after the folder: a temporary folder holds a
link to it, so every part of the server sees the usual layout, and the model
is read from where it lies. The link goes when the server exits.
"""

from __future__ import annotations

import contextlib
import dataclasses
import tempfile
from collections.abc import Iterator
from pathlib import Path

import structlog

from modelplatform.base.settings import Settings
from modelplatform.models import repository

log = structlog.get_logger("modelplatform.composition")


@contextlib.contextmanager
def as_repository(settings: Settings) -> Iterator[Settings]:
    """The settings to serve with: unchanged, or naming a repository that links the model folder."""
    root = settings.model_repository
    if settings.model_repository_url or not repository.is_model_folder(root):
        yield settings
        return
    with tempfile.TemporaryDirectory(prefix="modelplatform-model-folder-") as folder:
        link = Path(folder) / root.resolve().name
        link.symlink_to(root.resolve(), target_is_directory=True)
        log.info("repository_is_one_model", model=link.name, path=str(root))
        yield dataclasses.replace(settings, model_repository=Path(folder))
