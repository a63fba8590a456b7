"""A model repository behind a URL (``s3://``, ``gs://``, ``as://``), seen through a local mirror.

The core never reads object storage itself: a plugin answers the
``open_repository`` hook with a :class:`RepositorySource`, which keeps a local
folder in step with the remote one. Everything else (scanning, loading,
polling) reads that folder as it reads any local repository; the source is
asked to bring it up to date at the two moments the remote side may have
changed: before an explicit load of one model, and before each poll scan.

The repository index is the one reader that does not trust the mirror: it
asks the source which model folders the remote side holds now
(:class:`RemoteListing`), so a model added to or deleted from the bucket shows
in the index before anything fetches it.
"""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path
from typing import Protocol, runtime_checkable

import pluggy

from modelplatform.base.errors import InvalidArgument, Unavailable
from modelplatform.base.settings import Settings, is_remote

__all__ = ["LISTING_TIMEOUT_S", "RemoteListing", "RepositorySource", "is_remote", "open_repository"]

#: How long an index call waits for the remote listing before it answers UNAVAILABLE.
LISTING_TIMEOUT_S = 10.0


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

    def model_names(self) -> list[str]:
        """The model folders the remote repository holds now, sorted: one bounded listing
        of its top level (the mirror is not changed). Hidden names are left out."""
        ...

    def refresh(self) -> None:
        """Re-list the whole remote repository and bring every model folder in step."""
        ...

    def close(self) -> None:
        """Release the mirror at exit (a temporary one is deleted; a given one is kept)."""
        ...


def open_repository(settings: Settings, hook: pluggy.HookRelay) -> tuple[Settings, RepositorySource | None]:
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


class RemoteListing:
    """``source.model_names()`` for the index: one listing at a time, waited for a bounded time.

    A call arriving while a listing runs shares it rather than starting
    another, so a slow store holds at most one worker thread however often
    the index is asked. A listing that outlives the wait keeps running in its
    thread (a blocking call cannot be interrupted) and the next call joins it.
    """

    def __init__(self, source: RepositorySource, timeout_s: float = LISTING_TIMEOUT_S) -> None:
        self._source = source
        self._timeout_s = timeout_s
        self._running: asyncio.Future[list[str]] | None = None

    async def model_names(self) -> list[str]:
        """The remote model names; raises ``Unavailable`` naming the URL when the store
        fails or does not answer within the timeout."""
        if self._running is None or self._running.done():
            self._running = asyncio.ensure_future(asyncio.to_thread(self._source.model_names))
            self._running.add_done_callback(_retrieved)
        try:
            return await asyncio.wait_for(asyncio.shield(self._running), self._timeout_s)
        except TimeoutError:
            raise Unavailable(
                f"{self._source.location}: the repository listing did not finish "
                f"within {self._timeout_s:g}s (storage endpoint slow or unreachable)"
            ) from None


def _retrieved(listing: asyncio.Future[list[str]]) -> None:
    """Mark a listing's failure as seen: a caller that gave up waiting never reads it."""
    if not listing.cancelled():
        listing.exception()
