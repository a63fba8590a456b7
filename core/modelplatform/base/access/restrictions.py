"""Restricted APIs (Triton's ``--http-restricted-api`` / ``--grpc-restricted-protocol``).

Each group is ``<category>[,<category>...]:<key>=<value>``: a request of one
of those categories must carry header ``<key>`` (HTTP) or metadata
``triton-grpc-protocol-<key>`` (gRPC: Triton's only spelling) with exactly
``<value>``. A category may be in one group only. Header names compare
case-insensitively; values exactly.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING

from modelplatform.base.access.categories import CATEGORIES, unknown_categories
from modelplatform.base.errors import InvalidArgument

if TYPE_CHECKING:
    from modelplatform.base.settings import Settings

HTTP_RESTRICTED_FLAG = "--http-restricted-api"
GRPC_RESTRICTED_FLAG = "--grpc-restricted-protocol"

#: Triton's gRPC metadata for a restricted protocol's key is ``triton-grpc-protocol-<key>``.
GRPC_KEY_PREFIX = "triton-grpc-protocol-"


@dataclass(frozen=True, slots=True)
class Restriction:
    """The header (lower-case) and the exact value one group of categories needs."""

    key: str
    value: str


@dataclass(frozen=True, slots=True)
class Restrictions:
    """Category -> the restriction it is under (absent: not restricted)."""

    by_category: Mapping[str, Restriction] = field(default_factory=lambda: MappingProxyType({}))

    @classmethod
    def parse(cls, groups: Iterable[str], flag: str) -> Restrictions:
        """Parse every group; InvalidArgument names ``flag`` and what is wrong."""
        by_category: dict[str, Restriction] = {}
        for group in groups:
            categories, restriction = parse_group(group, flag)
            for category in categories:
                if category in by_category:
                    raise InvalidArgument(f"{flag}: category '{category}' is in more than one group")
                by_category[category] = restriction
        return cls(MappingProxyType(by_category))

    def __bool__(self) -> bool:
        return bool(self.by_category)

    def get(self, category: str) -> Restriction | None:
        return self.by_category.get(category)


def parse_group(group: str, flag: str) -> tuple[list[str], Restriction]:
    """``a,b:key=value`` -> (["a", "b"], Restriction("key", "value"))."""
    names, colon, pair = group.partition(":")
    key, equals, value = pair.partition("=")
    categories = [name.strip() for name in names.split(",") if name.strip()]
    if not (colon and equals and categories and key.strip() and value):
        raise InvalidArgument(f"{flag} '{group}' is not '<api>[,<api>...]:<key>=<value>'")
    unknown = unknown_categories(categories)
    if unknown:
        raise InvalidArgument(f"{flag}: unknown API '{unknown[0]}' (known: {', '.join(CATEGORIES)})")
    if len(set(categories)) != len(categories):
        raise InvalidArgument(f"{flag} '{group}' names a category twice")
    return categories, Restriction(key.strip().lower(), value)


def grpc_value(metadata: Mapping[str, str], key: str) -> str | None:
    """The value a gRPC call carries for ``key``: only under Triton's prefixed name.

    Triton reads ``triton-grpc-protocol-<key>`` and nothing else; a bare ``<key>``
    is refused there, so it is here (a client written against us works on Triton).
    """
    return metadata.get(GRPC_KEY_PREFIX + key)


def http_groups(settings: Settings) -> list[str]:
    """The HTTP groups, with ``--repository-restrict key:value`` as one more (its old spelling)."""
    return [*settings.http_restricted_api, *_repository_group(settings)]


def grpc_groups(settings: Settings) -> list[str]:
    return [*settings.grpc_restricted_protocol, *_repository_group(settings)]


def _repository_group(settings: Settings) -> list[str]:
    key, _, value = settings.repository_restrict.partition(":")
    return [f"model-repository:{key.strip()}={value.strip()}"] if settings.repository_restrict else []
