"""Plug-ins named `module:factory`: one importer for retrievers and scorers.

Decision: the working directory is searched first, as `python -m` does, so a plug-in
file next to where the command runs (`./my_retriever.py` given as
`my_retriever:make`) imports without setting PYTHONPATH. The directory is put on
`sys.path` only for the import and taken off again, so it never shadows a module imported
later by the program itself; PYTHONPATH and installed packages are still found as before.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable
from typing import Any

from goldenset.errors import UsageError


def import_module_from_cwd(module_name: str):
    """Import `module_name`, looking in the working directory first (as `python -m` does)."""
    cwd = os.getcwd()
    added = cwd not in sys.path and "" not in sys.path
    if added:
        sys.path.insert(0, cwd)
    try:
        importlib.invalidate_caches()  # a plug-in file written since the last import is found too
        return importlib.import_module(module_name)
    finally:
        if added and cwd in sys.path:
            sys.path.remove(cwd)


def load_factory(spec: str, what: str, malformed: str) -> Callable[..., Any]:
    """Import `module:factory` (the attribute may be dotted); UsageError naming what does not resolve.

    `what` names the plug-in in messages (`--scorer 'x:y'`, `retriever 'x:y'`); `malformed`
    is the message for a spec that is not `module:factory`.
    """
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise UsageError(malformed)
    try:
        module = import_module_from_cwd(module_name)
    except ImportError as exc:
        raise UsageError(
            f"{what}: cannot import {module_name!r} ({exc}); it is looked for in the working directory "
            f"({os.getcwd()}), then on PYTHONPATH and among installed packages"
        ) from exc
    factory: Any = module
    for part in attr.split("."):
        factory = getattr(factory, part, None)
        if factory is None:
            raise UsageError(f"{what}: module {module_name!r} has no {attr!r}")
    if not callable(factory):
        raise UsageError(f"{what}: {attr!r} is not callable")
    return factory
