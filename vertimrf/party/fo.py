"""The frequency-oracle (FO) variant of LocEnc: GRR-perturbed, row-aligned columns.

Releasing one perturbed row per record would reveal the exact record count, which is not
differentially private under add/remove (the reference sends the exact n). Here every party
releases exactly N = round(n_hat) rows, where n_hat is the designated party's noisy count:

* rows are ordered by a keyed PRF of the record ID (a key only the parties know, bound to the
  run by the config hash), so all parties list the same records in the same order and the
  server learns nothing from it;
* if n < N, N - n dummy rows with uniformly random values are added (their order keys come
  from the same PRF on dummy indices, so the parties agree on where they go);
* if n > N, only the N records with the smallest order keys are kept.

Adding one record then swaps one output row (a uniform dummy or another record's report)
for that record's GRR report. Per attribute the density ratio of any two GRR reports, and of
a report and a uniform value, is within e^{+-eps}, so the row-aligned release costs what d
independent eps-DP releases cost (eps^2/2 each in zCDP). The server subtracts nothing for
the dummies: they number |n - N| = O(1/eps_count) and are spread uniformly.
"""

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
