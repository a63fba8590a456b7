"""Imports a version folder's model.py under a unique module name, and finds its class."""

from __future__ import annotations

import importlib.util
import itertools
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from modelplatform import InvalidArgument

MODEL_FILE = "model.py"
_counter = itertools.count()


def import_model_module(version_dir: Path, filename: str = "") -> ModuleType:
    """Load ``model.py`` (or the config's ``default_model_filename``) fresh: a reload never
    reuses the old module."""
    path = version_dir / (filename or MODEL_FILE)
    if not path.is_file():
        raise InvalidArgument(f"{path} does not exist")
    name = f"modelplatform_user_model_{next(_counter)}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise InvalidArgument(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def forget_module(module: ModuleType) -> None:
    sys.modules.pop(module.__name__, None)


def model_class(module: ModuleType, version_dir: Path) -> Any:
    """The module's ``Model`` class; a clear load error when it has none or no ``infer``."""
    found = getattr(module, "Model", None)
    if found is None or not callable(getattr(found, "infer", None)):
        raise InvalidArgument(f"{version_dir}/{MODEL_FILE} must define class Model with infer()")
    return found
