"""Where the mirror lives, and opening it: ``TRITON_AWS_MOUNT_DIRECTORY`` or a temporary folder.

A folder the operator names (Triton's variable, honoured for every scheme)
is kept at exit, so a restart fetches only what changed; otherwise the
mirror is a fresh temporary folder, deleted at exit. A worker of
``--workers N`` attaches to the mirror its supervisor made (the folder its
settings name, holding a manifest): shared, never deleted by the worker.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from pathlib import Path

import structlog

from .filesystems import open_filesystem
from .locations import Location
from .mirror import MANIFEST, BucketMirror

log = structlog.get_logger("modelplatform_storage")

MOUNT_DIRECTORY = "TRITON_AWS_MOUNT_DIRECTORY"


def open_mirror(
    location: Location, env: Mapping[str, str], attach_to: Path | None = None
) -> BucketMirror:
    """The mirror of ``location``, in step with it; raises one line naming the URL.

    ``attach_to``: an existing mirror to share (kept at exit), else the folder
    is chosen as the module says.
    """
    fs = open_filesystem(location, env)
    root, owned = (attach_to.resolve(), False) if attach_to is not None else _folder(env)
    mirror = BucketMirror(location, fs, root, owned)
    try:
        mirror.refresh()
    except BaseException:
        mirror.close()
        raise
    log.info("repository_mirror_opened", url=location.url, path=str(root), kept=not owned)
    return mirror


def existing_mirror(folder: Path) -> Path | None:
    """``folder`` when it already is a mirror (a worker's settings name its supervisor's)."""
    return folder if (folder / MANIFEST).is_file() else None


def _folder(env: Mapping[str, str]) -> tuple[Path, bool]:
    """(folder, whether this mirror made it and deletes it)."""
    given = env.get(MOUNT_DIRECTORY)
    if given:
        folder = Path(given)
        folder.mkdir(parents=True, exist_ok=True)
        return folder.resolve(), False
    return Path(tempfile.mkdtemp(prefix="modelplatform-repository-")), True
