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
from typing import Any

import structlog

from modelplatform import InvalidArgument

from .filesystems import open_filesystem
from .locations import Location
from .mirror import MANIFEST, BucketMirror

log = structlog.get_logger("modelplatform_storage")

MOUNT_DIRECTORY = "TRITON_AWS_MOUNT_DIRECTORY"
#: ``[plugins.storage] mirror_max_bytes`` from the environment (wins over the config file).
MAX_BYTES_VARIABLE = "MODELPLATFORM_STORAGE_MIRROR_MAX_BYTES"


def open_mirror(
    location: Location,
    env: Mapping[str, str],
    attach_to: Path | None = None,
    options: Mapping[str, Any] | None = None,
) -> BucketMirror:
    """The mirror of ``location``, in step with it; raises one line naming the URL.

    ``attach_to``: an existing mirror to share (kept at exit), else the folder
    is chosen as the module says. ``options``: the ``[plugins.storage]`` table.
    """
    max_bytes = mirror_max_bytes(options or {}, env)
    fs = open_filesystem(location, env)
    root, owned = (attach_to.resolve(), False) if attach_to is not None else _folder(env)
    mirror = BucketMirror(location, fs, root, owned, max_bytes)
    try:
        mirror.refresh()
    except BaseException:
        mirror.close()
        raise
    log.info("repository_mirror_opened", url=location.url, path=str(root), kept=not owned)
    return mirror


def mirror_max_bytes(options: Mapping[str, Any], env: Mapping[str, str]) -> int:
    """``mirror_max_bytes`` (0: no bound but the disk's free space); raises InvalidArgument
    for a bad value or an unknown key in ``[plugins.storage]``."""
    unknown = sorted(set(options) - {"mirror_max_bytes"})
    if unknown:
        raise InvalidArgument(
            f"[plugins.storage]: unknown option {', '.join(unknown)} (known: mirror_max_bytes)"
        )
    value: Any = env.get(MAX_BYTES_VARIABLE) or options.get("mirror_max_bytes", 0)
    where = MAX_BYTES_VARIABLE if env.get(MAX_BYTES_VARIABLE) else "[plugins.storage] mirror_max_bytes"
    try:
        number = int(value)
    except (TypeError, ValueError):
        number = -1
    if isinstance(value, bool) or number < 0:
        raise InvalidArgument(f"{where} must be a whole number of bytes, 0 or more (got {value!r})")
    return number


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
