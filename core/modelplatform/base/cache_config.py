"""Triton's ``--cache-config <cache>,<key>=<value>`` (repeatable): the response cache's size.

Only Triton's ``local`` cache exists here, with its one key, ``size`` (bytes):
``--cache-config local,size=1048576``. Anything else (Triton's ``redis``
cache, an unknown key, a size that is not a positive number) is refused at
start-up naming what is wrong, rather than serving without the cache asked for.
"""

from __future__ import annotations

from collections.abc import Iterable

from modelplatform.base.errors import InvalidArgument

LOCAL = "local"


def cache_size(values: Iterable[str]) -> int:
    """The local cache's size in bytes; 0 when no ``--cache-config`` is given."""
    settings: dict[str, str] = {}
    for value in values:
        cache, _, pair = value.partition(",")
        key, equals, setting = pair.partition("=")
        if not equals or not key:
            raise InvalidArgument(f"--cache-config '{value}': expected <cache>,<key>=<value>")
        if cache.strip() != LOCAL:
            raise InvalidArgument(f"--cache-config '{value}': only the '{LOCAL}' cache is served here")
        if key.strip() != "size":
            raise InvalidArgument(
                f"--cache-config '{value}': the local cache has no key '{key}' (only 'size')"
            )
        settings[key.strip()] = setting.strip()
    if not settings:
        return 0
    size = settings["size"]
    if not size.isdigit() or int(size) <= 0:
        raise InvalidArgument(f"--cache-config local,size={size}: size must be a positive number of bytes")
    return int(size)


def check_cache_config(values: tuple[str, ...]) -> None:
    """The option's check: refused when options resolve, before anything starts."""
    cache_size(values)
