"""Builds the plugin manager from entry points, honouring allow and block lists."""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import metadata
from typing import TYPE_CHECKING, cast

import pluggy
import structlog

from modelplatform import hookspecs
from modelplatform.base.errors import PluginError
from modelplatform.base.settings import Settings

if TYPE_CHECKING:
    from modelplatform.models.backend import Backend

log = structlog.get_logger("modelplatform.composition.plugins")

hookimpl = pluggy.HookimplMarker(hookspecs.PROJECT)


@dataclass(frozen=True, slots=True)
class PluginInfo:
    """One installed plugin as `platform plugins` shows it."""

    name: str
    distribution: str
    version: str
    status: str  # loaded | disabled | failed | unavailable
    detail: str = ""


@dataclass(frozen=True, slots=True)
class PluginSet:
    manager: pluggy.PluginManager
    infos: tuple[PluginInfo, ...]

    @property
    def loaded(self) -> tuple[str, ...]:
        return tuple(i.name for i in self.infos if i.status == "loaded")


def build_plugin_manager(settings: Settings, extra: Sequence[object] = ()) -> PluginSet:
    """A fresh plugin manager with every allowed entry point registered and checked.

    ``extra`` plugin objects are registered as well (tests and embedding use it
    to add a plugin that is not installed as a distribution).
    """
    manager = pluggy.PluginManager(hookspecs.PROJECT)
    manager.add_hookspecs(hookspecs)
    infos = [_register(manager, ep, settings) for ep in _entry_points()]
    for index, plugin in enumerate(extra):
        name = getattr(plugin, "__name__", f"extra-{index}")
        manager.register(plugin, name=name)
        infos.append(PluginInfo(name, "(in-process)", "-", "loaded"))
    _check_allow_list(settings, infos)
    manager.check_pending()
    return PluginSet(manager, tuple(sorted(infos, key=lambda i: i.name)))


def _entry_points() -> list[metadata.EntryPoint]:
    return sorted(metadata.entry_points(group=hookspecs.PROJECT), key=lambda ep: ep.name)


def _register(manager: pluggy.PluginManager, ep: metadata.EntryPoint, settings: Settings) -> PluginInfo:
    dist = ep.dist.name if ep.dist else "?"
    version = ep.dist.version if ep.dist else "?"
    if not _allowed(ep.name, settings):
        return PluginInfo(ep.name, dist, version, "disabled", "not enabled by settings")
    try:
        plugin = ep.load()
    except Exception as error:  # noqa: BLE001 - a broken plugin must not stop the rest
        log.error("plugin_load_failed", plugin=ep.name, reason=str(error))
        return PluginInfo(ep.name, dist, version, "failed", f"{type(error).__name__}: {error}")
    manager.register(plugin, name=ep.name)
    reason = _unavailable_backends(manager, ep.name, settings)
    if reason:
        return PluginInfo(ep.name, dist, version, "unavailable", reason)
    return PluginInfo(ep.name, dist, version, "loaded")


def _unavailable_backends(manager: pluggy.PluginManager, name: str, settings: Settings) -> str:
    """Why this plugin's backends cannot run here (e.g. no GPU), or ""."""
    reasons = []
    for impl in manager.hook.register_backends.get_hookimpls():
        if impl.plugin_name == name:
            # pluggy types every hook implementation as returning object.
            backends = cast("Sequence[type[Backend]] | None", impl.function(settings=settings))
            for cls in backends or ():
                reason = cls.unavailable_reason()
                if reason:
                    reasons.append(f"{cls.kind}: {reason}")
    return "; ".join(reasons)


def _allowed(name: str, settings: Settings) -> bool:
    return settings.allows(name)


def _check_allow_list(settings: Settings, infos: list[PluginInfo]) -> None:
    missing = set(settings.plugins) - {i.name for i in infos}
    if missing:
        raise PluginError(f"plugins not installed: {', '.join(sorted(missing))}")


async def call_shutdown_hooks(manager: pluggy.PluginManager, server: object) -> None:
    """Run every plugin's ``shutdown(server)``, awaiting what it returns, in pluggy's order.

    pluggy stops a hook call at the first exception, and hookspecs.py promises
    that one plugin's failure does not stop the others: so each implementation
    is called here on its own, and a failure is logged (``plugin_shutdown_failed``)
    and passed over. Wrappers (``hookwrapper``/``wrapper`` implementations) are
    not supported on this hook and are skipped.
    """
    arguments = {"server": server}
    for impl in reversed(manager.hook.shutdown.get_hookimpls()):  # pluggy's own call order
        if impl.hookwrapper or impl.wrapper:
            continue
        try:
            result = impl.function(**{name: arguments[name] for name in impl.argnames})
            if inspect.isawaitable(result):
                await result
        except Exception as error:  # noqa: BLE001 - the other plugins still shut down
            log.error(
                "plugin_shutdown_failed", plugin=impl.plugin_name, error=f"{type(error).__name__}: {error}"
            )
