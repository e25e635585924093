"""Generalized randomized response (GRR), the frequency-oracle baseline of
LocEnc (party side); design notes in docs/design/party.md."""

from __future__ import annotations

import math

import numpy as np

from vertimrf.domain import EncodedTable
from vertimrf.errors import ConfigError, DomainError
from vertimrf.privacy.calibration import grr_probabilities
from vertimrf.privacy.ledger import PrivacyLedger
from vertimrf.privacy.samplers import NoiseSampler


def grr_perturb(
    table: EncodedTable,
    epsilon: float,
    *,
    noise: NoiseSampler,
    ledger: PrivacyLedger,
    party: str | None = None,
) -> EncodedTable:
    """Perturb every column with GRR at ``epsilon`` each; charge d releases to ``ledger``."""
    if not isinstance(table, EncodedTable):
        raise DomainError(f"grr_perturb needs an EncodedTable; got {type(table).__name__}.")
    codes, domain = table.codes, table.domain
    if not (epsilon > 0 and math.isfinite(epsilon)):
        raise ConfigError(f"GRR epsilon must be positive; got {epsilon!r}.")
    ledger.charge_pure(
        "grr",
        epsilon,
        count=len(domain),
        party=party,
        description=f"GRR of {len(domain)} attributes (eps-LDP per report; row count public)",
    )
    n = codes.shape[0]
    out = np.empty_like(codes)
    for j, u in enumerate(domain.sizes):
        x = codes[:, j].astype(np.int64)
        if u == 1:
            out[:, j] = x
            continue
        p, _ = grr_probabilities(epsilon, u)
        keep = noise.bernoulli(p, n)
        other = noise.integers(u - 1, n)
        other += other >= x
        out[:, j] = np.where(keep, x, other)
    return EncodedTable(out, domain)
