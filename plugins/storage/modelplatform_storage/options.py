"""The storage plugin's option, declared once (``register_options``).

Namespaced, as a new plugin's options are: ``[plugins.storage] mirror_max_bytes``,
``MODELPLATFORM_STORAGE_MIRROR_MAX_BYTES``, ``--storage-mirror-max-bytes``.
"""

from __future__ import annotations

from modelplatform import Option

PLUGIN = "storage"


def _check_bound(value: int) -> None:
    from .cache import mirror_max_bytes  # the mirror's modules load only when used

    mirror_max_bytes({"mirror_max_bytes": value}, {})


OPTIONS = (
    Option("mirror_max_bytes", int, 0, "Most bytes the local mirror of an s3://, gs:// or as:// "
           "repository may hold; 0: no bound but the disk's free space.", _check_bound),
)  # fmt: skip
