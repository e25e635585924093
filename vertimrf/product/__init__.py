"""The cross-product backends (:class:`~vertimrf.protocol.secure.product.Dealing`, and
:class:`~vertimrf.protocol.secure.product.CrossProduct` where the parties' steps are the
secure method's): what the parties and the dealer run to turn feature blocks into shares
of cross counts. Each backend is a module here, named in
:data:`~vertimrf.protocol.secure.product.PRODUCTS`."""

from __future__ import annotations

import importlib

from vertimrf.protocol.secure.product import PRODUCTS, CrossProduct, Dealing, check_product


def dealing(name: str) -> Dealing:
    """The backend of the config's ``product`` ``name``, imported on first use; ConfigError
    for an unknown name."""
    check_product(name)
    module, _, cls = PRODUCTS[name].partition(":")
    backend: Dealing = getattr(importlib.import_module(module), cls)()
    return backend


def cross_product(name: str) -> CrossProduct | None:
    """The backend of ``name`` as the secure method's parties use it; None for a backend
    whose parties run steps of their own (:func:`dealing` has its dealing part)."""
    backend = dealing(name)
    return backend if isinstance(backend, CrossProduct) else None
