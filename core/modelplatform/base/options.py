"""Option declarations: one :class:`Option` becomes a flag, a variable and a config key.

A plugin returns its options from the ``register_options`` hook (core declares
its own the same way, core_options.py). From one declaration come, for a
plugin named ``<plugin>``:

======================  =========================================  ============================
                        namespaced (the default)                   ``top_level=True``
======================  =========================================  ============================
``platform serve`` flag ``--<plugin>-<name>``                      ``--<name>``
environment variable    ``MODELPLATFORM_<PLUGIN>_<NAME>``          ``MODELPLATFORM_<NAME>``
TOML config key         ``[plugins.<plugin>] <name>``              ``<name>`` (top level)
======================  =========================================  ============================

(``_`` in a name is ``-`` in a flag; ``-`` in a plugin name is ``_`` in a
variable.) ``top_level`` keeps a name that existed before options moved into
plugins (Triton's ``--metrics-port``); a new option should stay namespaced.
The plugin reads the resolved values with ``settings.options_for("<plugin>")``
(every declared option present, defaults filled in), typically into a frozen
dataclass of its own.

``table`` names the namespace when it is not the declaring plugin's name:
the entry points of one distribution that share a table (grps-rest and
grps-grpc read ``[plugins.grps]``) each declare the same options with the
same ``table``; the options apply while any of them is enabled. An option of
type ``dict`` is a structure, not a value: it exists only as a config table
(``[plugins.<plugin>.<name>]``), with no flag and no variable, and its
``check`` validates the whole table.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from modelplatform.base.errors import InvalidArgument

ENV_PREFIX = "MODELPLATFORM_"
#: The value types an option may have; ``tuple`` is a list of strings, ``dict`` a
#: config table (no flag, no variable).
TYPES: tuple[type, ...] = (bool, int, float, str, Path, tuple, dict)
_TRUE = ("1", "true", "yes", "on")


@dataclass(frozen=True, slots=True)
class Option:
    """One setting, declared once (``register_options``)."""

    #: A Python identifier: the key of the value in ``settings.options_for(plugin)``.
    name: str
    #: bool, int, float, str, Path, tuple (a list of strings: a repeatable flag) or
    #: dict (a config table only: declare it ``cli=False``).
    type: type = str
    #: The value when no source gives one; None for a bool means "not given" (a fall-back applies).
    default: Any = None
    help: str = ""
    #: Called with the converted value; raises InvalidArgument (its message is shown
    #: as is) or ValueError (shown after the option's name) to refuse it.
    check: Callable[[Any], None] | None = None
    #: The ``serve --help`` panel; None: the plugin's own panel (named after it).
    panel: str | None = None
    #: Keep the un-namespaced flag, variable and key (names older than the option's plugin).
    top_level: bool = False
    #: Flag names instead of the derived one (the first is the primary); aliases go here.
    flags: tuple[str, ...] = ()
    metavar: str | None = None
    #: Separator of a list's items in an environment variable (and a non-repeatable flag).
    separator: str = ","
    #: A list flag given once with separated items (``--plugins a,b``) instead of repeated.
    repeatable: bool = True
    #: False: config file and environment only, no flag (settings an operator rarely changes).
    cli: bool = True
    #: Set by :func:`tls_options`: the listener whose TLS this option configures.
    tls_listener: str = ""
    #: The namespace (``[plugins.<table>]``, ``--<table>-``, ``MODELPLATFORM_<TABLE>_``)
    #: when not the declaring plugin's name: one table shared by several entry points.
    table: str = ""

    def __post_init__(self) -> None:
        if not self.name.isidentifier():
            raise ValueError(f"option name {self.name!r} is not an identifier")
        if self.type not in TYPES:
            raise ValueError(f"option {self.name}: type {self.type!r} is not one of {TYPES}")
        if self.type is dict and (self.cli or self.top_level):
            raise ValueError(f"option {self.name}: a dict is a [plugins.<plugin>] table: cli=False")

    @property
    def in_environment(self) -> bool:
        """Whether a ``MODELPLATFORM_*`` variable can give it (a table cannot)."""
        return self.type is not dict


def tls_options(listener: str, panel: str | None = None) -> tuple[Option, ...]:
    """The five TLS options of a plugin's own listener (Triton's naming, as the metrics port's).

    ``--<listener>-use-ssl[-mutual]``, ``--<listener>-server-cert``,
    ``--<listener>-server-key`` and ``--<listener>-root-cert``; each one not
    given takes the HTTP port's value. The core reads the files at start-up,
    re-reads them on change or SIGHUP, and hands the listener its context:
    ``ServerContext.ssl_context("<listener>")``.
    """
    port = f"the {listener} port"
    files = {
        "server_cert": "Certificate (chain), PEM; re-read on change or SIGHUP (default: the HTTP one).",
        "server_key": "Private key, PEM (default: the HTTP one).",
        "root_cert": "CA certificate(s) of the clients (mutual TLS) (default: the HTTP one).",
    }
    switches = {
        "use_ssl": f"Serve TLS on {port} (default: as HTTP).",
        "use_ssl_mutual": f"Serve mutual TLS on {port}: clients need a certificate of the root cert "
        "(default: as HTTP).",
    }
    made = [Option(f"{listener}_{name}", bool, None, text, panel=panel, top_level=True,
                   tls_listener=listener) for name, text in switches.items()]  # fmt: skip
    made += [Option(f"{listener}_{name}", str, "", text, panel=panel, top_level=True, metavar="<pem>",
                    tls_listener=listener) for name, text in files.items()]  # fmt: skip
    return tuple(made)


@dataclass(frozen=True, slots=True)
class Declared:
    """An option bound to its owner: the core (``owner == ""``) or the plugin that declared it.

    ``owner`` is the namespace (the plugin's name, or the option's ``table``);
    ``providers`` the plugins that declare it (the owner alone unless a table is shared).
    """

    option: Option
    owner: str = ""
    providers: tuple[str, ...] = ()

    @property
    def dest(self) -> str:
        """The option's one identifier on the command line and in ``overrides``."""
        if self.option.top_level or not self.owner:
            return self.option.name
        return f"{self.owner}_{self.option.name}".replace("-", "_")

    @property
    def flags(self) -> tuple[str, ...]:
        return self.option.flags or ("--" + self.dest.replace("_", "-"),)

    @property
    def env(self) -> str:
        return ENV_PREFIX + self.dest.upper()

    @property
    def key(self) -> tuple[str, ...]:
        """Where the config file holds it: ``(name,)`` at the top level, else ``("plugins", owner, name)``."""
        if self.option.top_level or not self.owner:
            return (self.option.name,)
        return ("plugins", self.owner, self.option.name)

    @property
    def key_text(self) -> str:
        return self.key[0] if len(self.key) == 1 else f"[plugins.{self.owner}] {self.option.name}"

    @property
    def panel(self) -> str | None:
        return self.option.panel or (f"{self.owner} plugin" if self.owner else None)

    def convert(self, value: Any) -> Any:
        """The value in the option's type; a string (environment, flag) is parsed."""
        kind = self.option.type
        try:
            if kind is bool:
                return _boolean(value)
            if kind is tuple:
                items = value.split(self.option.separator) if isinstance(value, str) else value
                return tuple(str(item).strip() for item in items if str(item).strip())
            if kind is dict:
                return _table(value)
            if kind in (int, float) and isinstance(value, bool):
                raise TypeError("a boolean is no number")
            if kind is int and isinstance(value, float) and not value.is_integer():
                raise ValueError("a fraction is no whole number")  # int() would cut it silently
            return kind(value)
        except (TypeError, ValueError):
            raise InvalidArgument(f"setting {self.option.name}: cannot use {value!r}") from None

    def checked(self, value: Any) -> Any:
        converted = self.convert(value)
        if self.option.check is not None:
            try:
                self.option.check(converted)
            except ValueError as error:
                raise InvalidArgument(f"{self.option.name}: {error}") from None
        return converted


def _table(value: Any) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise TypeError("a table is expected")
    return dict(value)


def _boolean(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    return str(value).strip().lower() in _TRUE  # anything else is false, as it always was


def declared_by(owner: str, options: Sequence[Option]) -> tuple[Declared, ...]:
    return tuple(Declared(option, option.table or owner, (owner,)) for option in options)
