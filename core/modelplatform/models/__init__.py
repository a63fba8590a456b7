"""The model manager: what is loaded, in which state, and why not.

States follow Triton: UNAVAILABLE, LOADING, READY, UNLOADING (plus UNKNOWN for
a model seen on disk but never asked for). Every load and unload of one model
runs as a task under that model's lock, in arrival order, so a load/unload
race ends in the state of the last request. A load arriving while an
identical load is pending joins it, and a load of an unchanged, READY model is
a no-op: concurrent loads load a model once. Different models load
concurrently; backends do their blocking work off the event loop.

A model with no READY version is not there: the manager answers
ModelNotFound, as for an unknown name, whether it was never loaded, unloaded
or failed; ModelNotReady (transient) only while its first load runs. The
index shows each version once: a serving version being reloaded stays READY.

A reload builds the new versions completely, swaps them in, and only then
drains and unloads the old ones, so no request is dropped. A failed reload
keeps the previous versions serving and records the reason, which the index
and the error show.

Modules, by reason to change: ``states`` (model states, versions, index rows),
``override`` (what a load request replaces), ``manager`` (queries and the
per-model queue of operations), ``loading`` (loading, swapping and unloading
versions and their backend instances).
"""

from modelplatform.models.manager import ModelManager, Replicator
from modelplatform.models.override import LoadOverride
from modelplatform.models.states import IndexEntry, ModelState, ModelVersion

__all__ = ["IndexEntry", "LoadOverride", "ModelManager", "ModelState", "ModelVersion", "Replicator"]
