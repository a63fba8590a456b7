"""A model repository behind a URL (``s3://``, ``gs://``, ``as://``), seen through a local mirror.

The core never reads object storage itself: a plugin answers the
``open_repository`` hook with a :class:`RepositorySource`, which keeps a local
folder in step with the remote one. Everything else (scanning, loading,
polling) reads that folder as it reads any local repository; the source is
asked to bring it up to date at the two moments the remote side may have
changed: before an explicit load of one model, and before each poll scan.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Protocol, runtime_checkable

import pluggy

from .errors import InvalidArgument
from .settings import Settings, is_remote

__all__ = ["RepositorySource", "is_remote", "open_repository"]


@runtime_checkable
class RepositorySource(Protocol):
    """A remote repository mirrored into :attr:`local_root`.

    The methods block (network and disk): the core calls them in a worker
    thread. Each raises ``ModelPlatformError`` with one line naming the URL
    when the remote side cannot be read (credentials, bucket, endpoint).
    """

    #: The URL as the operator gave it (what messages name).
    location: str

    @property
    def local_root(self) -> Path:
        """The local folder holding the mirror; the core scans and loads from it."""
        ...

    def fetch_model(self, name: str) -> None:
        """Bring ``<local_root>/<name>`` in step with the remote model folder (new or changed
        files fetched, removed ones deleted; the folder removed when the model is gone)."""
        ...

    def refresh(self) -> None:
        """Re-list the whole remote repository and bring every model folder in step."""
        ...

    def close(self) -> None:
        """Release the mirror at exit (a temporary one is deleted; a given one is kept)."""
        ...


def open_repository(
    settings: Settings, hook: pluggy.HookRelay
) -> tuple[Settings, RepositorySource | None]:
    """Open ``settings.model_repository_url`` through the plugins; the settings name the mirror.

    Returns the settings unchanged and no source for a local repository.
    Raises ``ModelPlatformError`` when no plugin knows the URL's scheme or the
    source cannot be opened (its message names the URL).
    """
    location = settings.model_repository_url
    if not location:
        return settings, None
    source = hook.open_repository(location=location, settings=settings)
    if source is None:
        scheme = location.split("://", 1)[0]
        raise InvalidArgument(
            f"no installed plugin opens {scheme}:// repositories (install modelplatform-storage)"
        )
    return dataclasses.replace(settings, model_repository=source.local_root), source
