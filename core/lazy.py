"""Packages that import each public name from its module on first use (PEP 562).

``__getattr__, __dir__ = lazy_names(__name__, {"Name": "module", ...})`` in a package's ``__init__``
keeps importing the package cheap: a name's module (and what it imports) loads only when asked for.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any

__all__ = ["lazy_names"]


def lazy_names(package: str, homes: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package``, whose names live in the submodules ``homes`` gives."""

    def __getattr__(name: str) -> Any:
        if name in homes:
            return getattr(import_module(f".{homes[name]}", package), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted(homes)

    return __getattr__, __dir__
