"""The server's side of method="secure", one function per protocol
step; design notes in docs/design/server.md."""

from __future__ import annotations

from typing import TYPE_CHECKING

from vertimrf.lazy import lazy_names

if TYPE_CHECKING:  # loaded on first use: the dealer alone imports no selection nor fit
    from vertimrf.server.secure.server import SecureServer as SecureServer

_EXPORTS = {"SecureServer": "vertimrf.server.secure.server"}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_names(__name__, _EXPORTS)
