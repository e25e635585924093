"""The frequency-oracle (FO) variant of LocEnc: GRR-perturbed, row-aligned
columns; design notes in docs/design/party.md."""

from __future__ import annotations

import numpy as np

from vertimrf.domain import EncodedTable
from vertimrf.party.keys import HashKeys
from vertimrf.party.registers import keyed_prf
from vertimrf.privacy.samplers import NoiseSampler

_ORDER_CONTEXT = b"vertimrf/fo-order"
_DUMMY_CONTEXT = b"vertimrf/fo-dummy"


def aligned_rows(
    table: EncodedTable,
    fingerprints: np.ndarray,
    secret: bytes,
    n_rows: int,
    noise: NoiseSampler,
    *,
    context: bytes,
) -> EncodedTable:
    """The party's ``n_rows`` rows in the parties' common secret order.

    ``context`` binds the order to the run (``ProtocolConfig.run_context()``); dummy values
    are drawn from ``noise``.
    """
    order_key = HashKeys.from_secret(secret, 1, context=_ORDER_CONTEXT + context)
    dummy_key = HashKeys.from_secret(secret, 1, context=_DUMMY_CONTEXT + context)
    codes, domain = table.codes, table.domain
    n = codes.shape[0]
    n_dummy = max(0, n_rows - n)
    real_keys = keyed_prf(order_key, fingerprints)
    dummy_keys = keyed_prf(dummy_key, np.arange(n_dummy, dtype=np.uint64))
    dummies = np.empty((n_dummy, len(domain)), dtype=codes.dtype)
    for j, u in enumerate(domain.sizes):
        dummies[:, j] = noise.integers(u, n_dummy)
    rows = np.concatenate([codes, dummies])
    order = np.argsort(np.concatenate([real_keys, dummy_keys]), kind="stable")[:n_rows]
    return EncodedTable(rows[order], domain)
