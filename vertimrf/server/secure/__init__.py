"""The server's side of method="secure", one function per protocol step over the frozen
session (config, plan, keys, ledger, record-set strategy, seed) and the step data (what the
steps made; both :mod:`.session`), the dealer's cryptography apart from the DP
post-processing; :class:`SecureServer` (:mod:`.server`) checks the step order and dispatches:

1. deal (:mod:`.dealer`): seeds for every party's mask U_p and every pair's W, and
   Z_pq = U_p^T U_q - W_pq, each sealed to its party; after the request, the round-2 deals.
   The masks are expanded under the labels of :mod:`vertimrf.protocol.masks`.
2. select (:mod:`.selection`): from the first releases (every 2-way marginal, or a
   workload's first release, cheap), summed with the server's noise (:mod:`.session`),
   PrivMRF's selection on the whole table as post-processing; it returns the request for
   re-measurement.
3. fit (:mod:`.fit`): every measurement fits the MRF by mirror descent; synthesize samples
   n rows.

Every noise scale is re-derived from the config
(:class:`~vertimrf.protocol.secure.plan.SecurePlan`); the ledger holds the plan's releases, so the
report's (epsilon, delta) does not depend on what parties declare.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vertimrf.lazy import lazy_names

if TYPE_CHECKING:  # loaded on first use: the dealer alone imports no selection nor fit
    from vertimrf.server.secure.server import SecureServer as SecureServer

_EXPORTS = {"SecureServer": "vertimrf.server.secure.server"}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_names(__name__, _EXPORTS)
