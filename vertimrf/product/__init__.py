"""The cross-product backends (:class:`~vertimrf.protocol.secure.product.CrossProduct`):
what the parties and the dealer run to turn feature blocks into shares of cross counts.
Each backend is a module here, named in
:data:`~vertimrf.protocol.secure.product.PRODUCTS`."""

from __future__ import annotations

import importlib

from vertimrf.protocol.secure.product import PRODUCTS, CrossProduct, check_product


def cross_product(name: str) -> CrossProduct:
    """The backend of the config's ``product`` ``name``, imported on first use; ConfigError
    for an unknown name."""
    check_product(name)
    module, _, cls = PRODUCTS[name].partition(":")
    backend: CrossProduct = getattr(importlib.import_module(module), cls)()
    return backend
