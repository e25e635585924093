"""Package names loaded on first use (PEP 562), so that importing one module of a package
does not import the rest of it: the cheap commands (``vertimrf --help``, ``keys``,
``secret``, ``config``, ``status``) import no Numba."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any


def lazy_names(
    package: str, exports: Mapping[str, str], modules: Sequence[str] = ()
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A package's ``__getattr__`` and ``__dir__``: each name in ``exports`` is read from
    its module (``exports[name]``) when first used; each of ``modules`` is a submodule."""

    def getattr_(name: str) -> Any:
        if name in modules:
            return importlib.import_module(f"{package}.{name}")
        if name in exports:
            return getattr(importlib.import_module(exports[name]), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def dir_() -> list[str]:
        return sorted([*exports, *modules])

    return getattr_, dir_
